// Issue 43, "Ready means ready": a standby operator (--leader-elect, gang scheduler on) that
// becomes leader with jobs waiting writes their first pod within 0.5 s of acquiring the Lease,
// and every gang is created placed (spec.nodeName in the create). Before the scheduler's caches
// started with the standby, they started at leadership: every first create waited the scheduler's
// job-cache wait (500 ms) and then fell back to an unplaced create bound later.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/rfc3339.h"
#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kPoolLabel[] = "lockstep.dev/test-pool";
constexpr char kLease[] = "lockstep-operator";  // --leader-election-id's default
constexpr int kJobs = 3;

// The first event of each pod of the namespace as the test's own watch delivered it: when, and
// whether the object as created had spec.nodeName.
class PodCreations {
 public:
  PodCreations(kube::RestClient& client, const std::string& ns) {
    thread_ = std::thread([this, &client, ns] {
      kube::WatchOptions options;
      options.cancel = &stop_;
      (void)client.Watch(kube::resources::Pods(), ns, options, [this](kube::WatchEvent&& e) {
        if (e.type != kube::WatchEventType::kAdded) return !stop_.load();
        const std::string name = e.object["metadata"].value("name", "");
        std::lock_guard<std::mutex> lock(mu_);
        first_.try_emplace(name, First{std::chrono::system_clock::now(),
                                       !e.object["spec"].value("nodeName", "").empty()});
        return !stop_.load();
      });
    });
  }
  ~PodCreations() {
    stop_ = true;
    thread_.join();
  }
  struct First {
    std::chrono::system_clock::time_point seen;
    bool placed;
  };
  std::map<std::string, First> Seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<std::string, First> first_;
  std::thread thread_;
};

json HeldLease(const std::string& ns, const std::string& holder) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", kLease}, {"namespace", ns}}},
          {"spec",
           {{"holderIdentity", holder},
            {"leaseDurationSeconds", 3600},
            {"acquireTime", FormatMicroTime(std::chrono::system_clock::now())},
            {"renewTime", FormatMicroTime(std::chrono::system_clock::now())}}}};
}

TEST(OperatorTakeoverTest, ANewLeaderCreatesTheWaitingGangsPlacedWithinHalfASecond) {
  LS_REQUIRE_CLUSTER();
  StatusOr<kube::testing::Cluster> c = kube::testing::Connect();
  ASSERT_TRUE(c.ok()) << c.status();
  kube::RestClient& client = *c->client;
  ASSERT_TRUE(InstallCrd().ok());
  kube::testing::TestNamespace ns(client, "ctrl-takeover");
  ASSERT_TRUE(ns.status().ok());
  const std::string pool = "takeover-" + kube::testing::RandomSuffix();
  std::vector<std::string> nodes;
  for (int i = 0; i < 2; ++i) {
    nodes.push_back(pool + "-" + std::to_string(i));
    ASSERT_TRUE(client.Create(kube::resources::Nodes(), "", KwokNode(nodes.back(), kPoolLabel,
                                                                     pool, 8)).ok());
  }
  struct DeleteNodes {
    kube::RestClient& client;
    const std::vector<std::string>& nodes;
    ~DeleteNodes() {
      for (const std::string& n : nodes) (void)client.Delete(kube::resources::Nodes(), "", n);
    }
  } delete_nodes{client, nodes};
  // Someone else leads: the operator starts as a standby.
  ASSERT_TRUE(client.Create(kube::resources::Leases(), ns.name(), HeldLease(ns.name(), "other"))
                  .ok());
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(client.Create(kube::resources::TrainingJobs(), ns.name(),
                              PoolJob("wait-" + std::to_string(i), 1, kPoolLabel, pool, 4))
                    .ok());
  }
  // kwok marks its nodes Ready within milliseconds; the standby's first lists hold them so.
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        for (const std::string& n : nodes) {
          StatusOr<json> node = client.Get(kube::resources::Nodes(), "", n);
          if (!node.ok()) return false;
          bool ready = false;
          for (const json& cond : node->value("status", json::object())
                                      .value("conditions", json::array())) {
            ready |= cond.value("type", "") == "Ready" && cond.value("status", "") == "True";
          }
          if (!ready) return false;
        }
        return true;
      },
      seconds(30)));
  PodCreations creations(client, ns.name());
  OperatorProcess op({ns.name()}, {"--leader-elect", "--leader-election-namespace=" + ns.name(),
                                   "--gang-scheduler=true"});
  ASSERT_TRUE(op.Start().ok());
  // Ready: every cache of the standby, the scheduler's included, has its first list.
  ASSERT_TRUE(op.WaitReady(seconds(60))) << op.ready_answer();
  EXPECT_TRUE(creations.Seen().empty()) << "a standby created pods";

  // The other holder steps down (a released Lease: no holder), as a SIGTERMed leader does.
  StatusOr<json> lease = client.Get(kube::resources::Leases(), ns.name(), kLease);
  ASSERT_TRUE(lease.ok()) << lease.status();
  (*lease)["spec"]["holderIdentity"] = "";
  ASSERT_TRUE(client.Update(kube::resources::Leases(), ns.name(), kLease, *lease).ok());
  ASSERT_TRUE(kube::testing::WaitFor([&] { return creations.Seen().size() >= kJobs; },
                                     seconds(30)))
      << "pods seen: " << creations.Seen().size() << "; log " << op.log_path();

  lease = client.Get(kube::resources::Leases(), ns.name(), kLease);
  ASSERT_TRUE(lease.ok()) << lease.status();
  const std::string holder = (*lease)["spec"].value("holderIdentity", "");
  ASSERT_FALSE(holder.empty() || holder == "other") << holder;
  StatusOr<std::chrono::system_clock::time_point> acquired =
      ParseTime((*lease)["spec"].value("acquireTime", ""));
  ASSERT_TRUE(acquired.ok()) << acquired.status();
  std::chrono::system_clock::time_point first = std::chrono::system_clock::time_point::max();
  for (const auto& [name, seen] : creations.Seen()) {
    first = std::min(first, seen.seen);
    EXPECT_TRUE(seen.placed) << name << " was created unplaced";
  }
  const auto after = std::chrono::duration_cast<milliseconds>(first - *acquired);
  std::printf("first pod seen %lld ms after the Lease was acquired\n",
              static_cast<long long>(after.count()));
  EXPECT_LT(after, milliseconds(500)) << "log " << op.log_path();
  op.Kill(SIGTERM);
  EXPECT_EQ(op.last_exit(), 0);
}

}  // namespace
}  // namespace lockstep::controller::testing
