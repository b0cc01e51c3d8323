#include "tests/integration/kube/test_env.h"

#include <fstream>
#include <sstream>
#include <thread>

namespace lockstep::kube::testing {

RestOptions NoLimits() {
  RestOptions options;
  options.qps = 0;
  return options;
}

StatusOr<Cluster> Connect(RestOptions options) {
  Cluster cluster;
  LS_ASSIGN_OR_RETURN(cluster.config, LoadDefaultConfig());
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, NewCurlTransport(cluster.config));
  cluster.transport = std::move(transport);
  cluster.client = std::make_unique<RestClient>(cluster.transport, options);
  return cluster;
}

TestNamespace::TestNamespace(RestClient& client, const std::string& prefix)
    : client_(client), name_(prefix + "-" + RandomSuffix()) {
  nlohmann::json ns = {{"apiVersion", "v1"},
                       {"kind", "Namespace"},
                       {"metadata", {{"name", name_}, {"labels", {{"lockstep.dev/test", "kube"}}}}}};
  status_ = client_.Create(resources::Namespaces(), "", ns).status();
  if (status_.ok()) status_ = WaitForDefaultServiceAccount(client_, name_);
}

Status WaitForDefaultServiceAccount(RestClient& client, const std::string& ns) {
  const bool ready = WaitFor(
      [&] { return client.Get(resources::ServiceAccounts(), ns, "default").ok(); },
      std::chrono::seconds(60), std::chrono::milliseconds(100));
  if (!ready) return DeadlineExceededError("no default ServiceAccount in " + ns + " after 60 s");
  return Status::Ok();
}

void NamespaceTest::SetUp() {
  LS_REQUIRE_CLUSTER();
  StatusOr<Cluster> cluster = Connect();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  cluster_ = std::move(cluster).value();
  ns_ = std::make_unique<TestNamespace>(client(), prefix_);
  ASSERT_TRUE(ns_->status().ok()) << ns_->status();
}

TestNamespace::~TestNamespace() {
  // The namespace controller removes everything inside; nothing waits for it.
  client_.Delete(resources::Namespaces(), "", name_).status().IgnoreError();
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

Status ClusterScript(const std::string& args) {
  std::string cmd = std::string(LOCKSTEP_SOURCE_DIR) + "/hack/cluster.sh " + args;
  if (const char* name = std::getenv("LOCKSTEP_CLUSTER_NAME"); name != nullptr && *name != '\0') {
    cmd += " --name " + std::string(name);
  }
  cmd += " >&2";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) return InternalError("`" + cmd + "` exited with " + std::to_string(rc));
  return Status::Ok();
}

int64_t ResidentBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = field + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream fields(line.substr(prefix.size()));
      int64_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return -1;
}

}  // namespace lockstep::kube::testing
