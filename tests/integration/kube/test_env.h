#pragma once
// Shared helpers for the kube client's integration tests: they run against the real local
// control plane named by $KUBECONFIG (hack/test.sh starts it) and isolate themselves in a
// namespace of their own that is deleted afterwards.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/rest_client.h"
#include "tests/testing/random_suffix.h"

namespace lockstep::kube::testing {

#define LS_REQUIRE_CLUSTER()                                                  \
  do {                                                                        \
    if (std::getenv("KUBECONFIG") == nullptr) GTEST_SKIP() << "KUBECONFIG unset"; \
  } while (0)

struct Cluster {
  ClusterConfig config;
  std::shared_ptr<Transport> transport;
  std::unique_ptr<RestClient> client;
};

RestOptions NoLimits();
// Connects with $KUBECONFIG (admin credentials), client-side limiting off unless `options` says.
StatusOr<Cluster> Connect(RestOptions options = NoLimits());

using ::lockstep::testing::RandomSuffix;  // tests/testing/random_suffix.h

// Waits until the namespace's "default" ServiceAccount exists: the ServiceAccount admission
// plugin rejects pods until the controller-manager has created it.
Status WaitForDefaultServiceAccount(RestClient& client, const std::string& ns);

// Creates namespace "<prefix>-<random>" (ready for pods) and deletes it (in the background)
// when destroyed.
class TestNamespace {
 public:
  TestNamespace(RestClient& client, const std::string& prefix);
  ~TestNamespace();
  const std::string& name() const { return name_; }
  const Status& status() const { return status_; }

 private:
  RestClient& client_;
  std::string name_;
  Status status_;
};

// The one fixture of a test that runs in a namespace of its own against the cluster in
// $KUBECONFIG (skipped without one): SetUp connects with admin credentials and creates
// "<prefix>-<random>", ready for pods; TearDown deletes it. A derived fixture that adds to
// SetUp calls NamespaceTest::SetUp() first and returns when IsSkipped() or HasFatalFailure().
class NamespaceTest : public ::testing::Test {
 protected:
  explicit NamespaceTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override;
  void TearDown() override { ns_.reset(); }

  RestClient& client() { return *cluster_.client; }
  const std::string& ns() const { return ns_->name(); }

  Cluster cluster_;
  std::unique_ptr<TestNamespace> ns_;

 private:
  std::string prefix_;
};

// Polls `done` every `poll` until it returns true or `timeout` passes.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll = std::chrono::milliseconds(50));

// Runs hack/cluster.sh with `args` for the cluster under test ($LOCKSTEP_CLUSTER_NAME when set).
Status ClusterScript(const std::string& args);

// Resident set size of this process in bytes (from /proc/self/status): "VmRSS" in total,
// "RssAnon" for heap and stacks, "RssFile" for mapped files such as shared libraries.
int64_t ResidentBytes(const std::string& field = "VmRSS");

}  // namespace lockstep::kube::testing
