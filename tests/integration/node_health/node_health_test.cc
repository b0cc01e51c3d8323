// NodeHealthMonitor against the real apiserver. Each test creates its own Node (no
// kwok.x-k8s.io/node annotation, so kwok leaves it alone) and its kube-node-lease Lease, renews
// the Lease itself like a kubelet, then breaks the node one way and waits for the lost handler.
// The grace is 3 s so a lost heartbeat shows within seconds.
#include "operator/controller/node_health.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <condition_variable>
#include <initializer_list>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "operator/api/time.h"
#include "operator/controller/controller_metrics.h"
#include "operator/controller/job_caches.h"
#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kGrace = seconds(3);
constexpr char kLeaseNs[] = "kube-node-lease";

std::string Now() { return kube::FormatMicroTime(std::chrono::system_clock::now()); }

json ReadyCondition(const std::string& status) {
  const std::string t = api::FormatTime(std::chrono::system_clock::now());
  return {{"type", "Ready"},
          {"status", status},
          {"reason", status == "True" ? "KubeletReady" : "KubeletNotReady"},
          {"message", status == "True" ? "test kubelet ready" : "test kubelet broke"},
          {"lastHeartbeatTime", t},
          {"lastTransitionTime", t}};
}

// A Node of the test's own (no kwok annotation: kwok leaves it alone), Ready, and its
// kube-node-lease Lease renewed now; the test renews the Lease itself like a kubelet.
json TestNode(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"lockstep.dev/test", "node-health"}}}}},
          {"spec", json::object()},
          {"status", {{"conditions", json::array({ReadyCondition("True")})}}}};
}

json TestLease(const std::string& name) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", kLeaseNs}}},
          {"spec", {{"holderIdentity", name}, {"leaseDurationSeconds", 40}, {"renewTime", Now()}}}};
}

// A counter's value, or a histogram's sample count, for one reason label.
double Sample(prometheus::Registry& registry, const std::string& family,
              const std::string& reason) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const auto& m : f.metric) {
      for (const auto& label : m.label) {
        if (label.name != "reason" || label.value != reason) continue;
        return f.type == prometheus::MetricType::Histogram
                   ? static_cast<double>(m.histogram.sample_count)
                   : m.counter.value;
      }
    }
  }
  return 0;
}

// What the lost handler reported, in order.
class Reports {
 public:
  void Add(const std::string& node, const NodeVerdict& v) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.emplace_back(node, v);
    }
    cv_.notify_all();
  }
  // The first report for `node` after the `skip` earlier ones, or nullopt at the deadline.
  std::optional<NodeVerdict> WaitFor(const std::string& node, size_t skip,
                                     std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<NodeVerdict> found;
    cv_.wait_for(lock, timeout, [&] {
      size_t n = 0;
      for (const auto& [name, v] : seen_) {
        if (name == node && n++ == skip) {
          found = v;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  size_t Count(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [name, v] : seen_) n += name == node ? 1 : 0;
    return n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, NodeVerdict>> seen_;
};

class NodeHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LS_REQUIRE_CLUSTER();
    auto cluster = kube::testing::Connect();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    node_ = "lockstep-nh-" + kube::testing::RandomSuffix();
    auto created = client().Create(kube::resources::Nodes(), "", TestNode(node_));
    ASSERT_TRUE(created.ok()) << created.status();
    node_created_ = true;
    auto lease_created = client().Create(kube::resources::Leases(), kLeaseNs, TestLease(node_));
    ASSERT_TRUE(lease_created.ok()) << lease_created.status();
    StartRenewing();

    NodeHealthOptions options;
    options.lease_grace = kGrace;
    // The guard off: a 3-s grace is shorter than the 10 s between kwok's renewals, so to this
    // monitor most of the cluster's kwok nodes read silent, and the guard would hold every
    // verdict these tests wait for. The guard's own test below uses a grace kwok meets.
    options.silence_hold_fraction = 0;
    monitor_ = std::make_unique<NodeHealthMonitor>(client(), options, &metrics_);
    monitor_->SetLostHandler(
        [this](const std::string& name, const NodeVerdict& v) { reports_.Add(name, v); });
    monitor_->Start();
    ASSERT_TRUE(monitor_->WaitForSync(seconds(10)));
    // Healthy while renewed, across more than the grace.
    std::this_thread::sleep_for(kGrace + seconds(2));  // the claim is "nothing happens": wait
    ASSERT_EQ(reports_.Count(node_), 0u) << "a renewed node was reported lost";
    ASSERT_FALSE(monitor_->Assess(node_, std::chrono::system_clock::now()).lost);
  }

  void TearDown() override {
    StopRenewing();
    if (monitor_) monitor_->Stop();
    if (!cluster_.client) return;
    (void)client().Delete(kube::resources::Leases(), kLeaseNs, node_);
    if (node_created_) (void)client().Delete(kube::resources::Nodes(), "", node_);
  }

  kube::RestClient& client() { return *cluster_.client; }

  // A kubelet's heartbeat, every second; `last_renewal_` is the renewTime last written.
  void StartRenewing() {
    renewing_ = true;
    renewer_ = std::thread([this] {
      while (renewing_) {
        const auto at = std::chrono::system_clock::now();
        auto r = client().MergePatch(kube::resources::Leases(), kLeaseNs, node_,
                                     {{"spec", {{"renewTime", kube::FormatMicroTime(at)}}}});
        if (r.ok()) last_renewal_ = at.time_since_epoch().count();
        for (int i = 0; i < 10 && renewing_; ++i) std::this_thread::sleep_for(milliseconds(100));
      }
    });
  }
  void StopRenewing() {
    renewing_ = false;
    if (renewer_.joinable()) renewer_.join();
  }
  api::Time LastRenewal() const { return api::Time(api::Time::duration(last_renewal_.load())); }

  // Waits for the next report on the node and checks its reason.
  NodeVerdict ExpectLost(const std::string& reason, std::chrono::milliseconds within,
                         size_t skip = 0) {
    std::optional<NodeVerdict> v = reports_.WaitFor(node_, skip, within);
    EXPECT_TRUE(v.has_value()) << "no loss of " << node_ << " reported within " << within.count()
                               << " ms";
    if (!v) return NodeVerdict{};
    EXPECT_TRUE(v->lost);
    EXPECT_EQ(v->reason, reason) << v->message;
    EXPECT_NE(v->message.find(node_), std::string::npos) << v->message;
    return *v;
  }

  kube::testing::Cluster cluster_;
  std::string node_;
  bool node_created_ = false;
  std::atomic<bool> renewing_{false};
  std::atomic<api::Time::rep> last_renewal_{0};
  std::thread renewer_;
  Reports reports_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_{registry_};
  std::unique_ptr<NodeHealthMonitor> monitor_;
};

TEST_F(NodeHealthTest, LeaseNotRenewedIsLostWithinGracePlusTwoSeconds) {
  StopRenewing();
  const api::Time last = LastRenewal();
  NodeVerdict v = ExpectLost("NodeLeaseExpired", milliseconds(10000));
  const auto detected = std::chrono::system_clock::now();
  EXPECT_LE(detected - last, kGrace + seconds(2)) << "detected too late";
  EXPECT_GT(detected - last, kGrace) << "detected before the grace passed";
  // "lease not renewed for Ns": N past the grace, and no more than the detection took.
  const std::string prefix = "node " + node_ + ": lease not renewed for ";
  ASSERT_EQ(v.message.rfind(prefix, 0), 0u) << v.message;
  const int silent = std::stoi(v.message.substr(prefix.size()));
  EXPECT_GE(silent, 3) << v.message;
  EXPECT_LE(silent, 5) << v.message;
  ASSERT_TRUE(v.failed_at.has_value());
  // renewTime carries microseconds; the verdict dates the failure at the last renewal.
  EXPECT_LE(std::chrono::abs(*v.failed_at - last), milliseconds(1));
  EXPECT_EQ(monitor_->Assess(node_, std::chrono::system_clock::now()).reason, "NodeLeaseExpired");

  // Renewed again: recovered and forgotten, so a second silence is reported again.
  StartRenewing();
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] { return !monitor_->Assess(node_, std::chrono::system_clock::now()).lost; }, seconds(5)));
  StopRenewing();
  ExpectLost("NodeLeaseExpired", milliseconds(10000), /*skip=*/1);
}

TEST_F(NodeHealthTest, ReadyFalseIsNotReady) {
  auto r = client().MergePatch(
      kube::resources::Nodes(), "", node_,
      {{"status", {{"conditions", json::array({ReadyCondition("False")})}}}}, "status");
  ASSERT_TRUE(r.ok()) << r.status();
  NodeVerdict v = ExpectLost("NodeNotReady", milliseconds(5000));
  EXPECT_NE(v.message.find("Ready=False (KubeletNotReady: test kubelet broke)"), std::string::npos)
      << v.message;
  EXPECT_TRUE(v.failed_at.has_value());
}

TEST_F(NodeHealthTest, NoExecuteTaintIsTainted) {
  // A NoSchedule taint alone is not a loss.
  auto r = client().MergePatch(
      kube::resources::Nodes(), "", node_,
      {{"spec",
        {{"taints", json::array({{{"key", "example.com/soft"}, {"effect", "NoSchedule"}}})}}}});
  ASSERT_TRUE(r.ok()) << r.status();
  r = client().MergePatch(
      kube::resources::Nodes(), "", node_,
      {{"spec",
        {{"taints",
          json::array({{{"key", "example.com/soft"}, {"effect", "NoSchedule"}},
                       {{"key", "example.com/maintenance"},
                        {"value", "now"},
                        {"effect", "NoExecute"},
                        {"timeAdded", api::FormatTime(std::chrono::system_clock::now())}}})}}}});
  ASSERT_TRUE(r.ok()) << r.status();
  NodeVerdict v = ExpectLost("NodeTainted", milliseconds(5000));
  EXPECT_NE(v.message.find("example.com/maintenance=now:NoExecute"), std::string::npos)
      << v.message;
  EXPECT_TRUE(v.failed_at.has_value());
  EXPECT_EQ(reports_.Count(node_), 1u);  // the NoSchedule step reported nothing

  // A lost node whose reason changes is reported again, but counted once.
  auto r2 = client().MergePatch(
      kube::resources::Nodes(), "", node_,
      {{"status", {{"conditions", json::array({ReadyCondition("False")})}}}}, "status");
  ASSERT_TRUE(r2.ok()) << r2.status();
  ExpectLost("NodeNotReady", milliseconds(5000), /*skip=*/1);
  EXPECT_EQ(Sample(registry_, "lockstep_node_failures_detected_total", "NodeTainted"), 1);
  EXPECT_EQ(Sample(registry_, "lockstep_node_failures_detected_total", "NodeNotReady"), 0);
  EXPECT_EQ(Sample(registry_, "lockstep_detection_delay_seconds", "NodeTainted"), 1);
}

TEST_F(NodeHealthTest, DeletedIsDeleted) {
  auto r = client().Delete(kube::resources::Nodes(), "", node_);
  ASSERT_TRUE(r.ok()) << r.status();
  node_created_ = false;
  ExpectLost("NodeDeleted", milliseconds(5000));
  // The Lease (still renewed) does not bring a deleted node back.
  std::this_thread::sleep_for(milliseconds(1500));  // two ticks: nothing may change
  EXPECT_EQ(reports_.Count(node_), 1u);
  EXPECT_EQ(monitor_->Assess(node_, std::chrono::system_clock::now()).reason, "NodeDeleted");
}

// A gauge's value (no labels), or -1 when absent.
double GaugeValue(prometheus::Registry& registry, const std::string& family) {
  for (const auto& f : registry.Collect()) {
    if (f.name == family && !f.metric.empty()) return f.metric.front().gauge.value;
  }
  return -1;
}

// Nodes and Leases of the test's own, renewed each second while their flag is up; deleted on
// destruction. One round renews every flagged Lease with the same renewTime, and SetRenewing
// waits for a round in progress: nodes stopped together have the same last renewal, so they pass
// the grace on the same monitor tick. (Renewed one by one, a tick could fall between two of
// them: CI once saw two of four stopped nodes lost a tick before the other two made the census
// hold.)
class RenewedNodes {
 public:
  RenewedNodes(kube::RestClient& client, const std::string& prefix, int count) : client_(client) {
    for (int i = 0; i < count; ++i) {
      const std::string name = prefix + "-s" + std::to_string(i);
      auto created = client_.Create(kube::resources::Nodes(), "", TestNode(name));
      EXPECT_TRUE(created.ok()) << created.status();
      auto lease_created = client_.Create(kube::resources::Leases(), kLeaseNs, TestLease(name));
      EXPECT_TRUE(lease_created.ok()) << lease_created.status();
      names_.push_back(name);
    }
    renew_ = std::make_unique<std::atomic<bool>[]>(count);
    for (int i = 0; i < count; ++i) renew_[i] = true;
    thread_ = std::thread([this] {
      while (running_) {
        {
          std::lock_guard<std::mutex> round(round_mu_);
          const std::string now = Now();
          for (size_t i = 0; i < names_.size(); ++i) {
            if (!renew_[i]) continue;
            (void)client_.MergePatch(kube::resources::Leases(), kLeaseNs, names_[i],
                                     {{"spec", {{"renewTime", now}}}});
          }
        }
        for (int i = 0; i < 10 && running_; ++i) std::this_thread::sleep_for(milliseconds(100));
      }
    });
  }
  ~RenewedNodes() {
    running_ = false;
    if (thread_.joinable()) thread_.join();
    for (const std::string& name : names_) {
      (void)client_.Delete(kube::resources::Leases(), kLeaseNs, name);
      (void)client_.Delete(kube::resources::Nodes(), "", name);
    }
  }
  const std::string& name(int i) const { return names_[i]; }
  // Between rounds: every node in `which` renews in the same rounds from now on.
  void SetRenewing(std::initializer_list<int> which, bool on) {
    std::lock_guard<std::mutex> round(round_mu_);
    for (int i : which) renew_[i] = on;
  }

 private:
  kube::RestClient& client_;
  std::mutex round_mu_;
  std::vector<std::string> names_;
  std::unique_ptr<std::atomic<bool>[]> renew_;
  std::atomic<bool> running_{true};
  std::thread thread_;
};

// The silence guard (silence_guard.h) in the monitor: most nodes silent at once loses none of
// them by silence, a node with explicit evidence is lost all the same, and when the census falls
// below the line the nodes still silent are lost after a fresh grace. The line is set for this
// cluster: held from 3 silent nodes of all it has. The grace (15 s) is longer than the 10 s between
// kwok's renewals, so the cluster's own kwok nodes never read silent.
TEST_F(NodeHealthTest, MostNodesSilentAtOnceAreHeldUntilTheCensusFalls) {
  RenewedNodes extra(client(), node_, 4);
  // The monitor's census counts every name it has a Node or a node Lease for.
  std::set<std::string> names;
  for (const auto& [ref, ns] : {std::pair{kube::resources::Nodes(), std::string()},
                                std::pair{kube::resources::Leases(), std::string(kLeaseNs)}}) {
    std::string rv;
    ASSERT_TRUE(client()
                    .ListEach(ref, ns, {},
                              [&names](json&& item) {
                                names.insert(item["metadata"]["name"].get<std::string>());
                                return Status::Ok();
                              },
                              &rv)
                    .ok());
  }
  const int total = static_cast<int>(names.size());
  constexpr auto kGuardGrace = seconds(15);

  prometheus::Registry registry;
  ControllerMetrics metrics(registry);
  NodeHealthOptions options;
  options.lease_grace = kGuardGrace;
  options.silence_hold_fraction = 3.0 / total;
  NodeHealthMonitor monitor(client(), options, &metrics);
  Reports reports;
  monitor.SetLostHandler(
      [&reports](const std::string& name, const NodeVerdict& v) { reports.Add(name, v); });
  monitor.Start();
  ASSERT_TRUE(monitor.WaitForSync(seconds(10)));
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] { return GaugeValue(registry, "lockstep_nodes_silent") == 0; }, seconds(5)))
      << "the cluster has silent nodes of its own: "
      << GaugeValue(registry, "lockstep_nodes_silent");

  // Four fall silent at once: past the grace, held, none reported lost.
  extra.SetRenewing({0, 1, 2, 3}, false);
  ASSERT_TRUE(
      kube::testing::WaitFor([&] { return monitor.SilenceHeld(); }, kGuardGrace + seconds(5)));
  std::this_thread::sleep_for(seconds(2));  // the claim is "nothing is reported": two ticks
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(reports.Count(extra.name(i)), 0u) << extra.name(i);
    EXPECT_FALSE(monitor.Assess(extra.name(i), std::chrono::system_clock::now()).lost);
  }
  EXPECT_EQ(GaugeValue(registry, "lockstep_nodes_silent"), 4);
  EXPECT_EQ(GaugeValue(registry, "lockstep_node_silence_held"), 1);

  // Explicit evidence stands while held: a kubelet's NotReady is lost (3 silent: still held).
  auto r = client().MergePatch(
      kube::resources::Nodes(), "", extra.name(0),
      {{"status", {{"conditions", json::array({ReadyCondition("False")})}}}}, "status");
  ASSERT_TRUE(r.ok()) << r.status();
  std::optional<NodeVerdict> not_ready = reports.WaitFor(extra.name(0), 0, seconds(5));
  ASSERT_TRUE(not_ready.has_value());
  EXPECT_EQ(not_ready->reason, "NodeNotReady");
  EXPECT_TRUE(monitor.SilenceHeld());

  // Two renew again: 1 silent, below the line; the hold ends, and the node still silent gets a
  // fresh grace from the release (a straggler of the same stall), then is lost after all.
  extra.SetRenewing({1, 2}, true);
  ASSERT_TRUE(kube::testing::WaitFor([&] { return !monitor.SilenceHeld(); }, seconds(6)));
  const auto released = std::chrono::steady_clock::now();
  std::optional<NodeVerdict> expired =
      reports.WaitFor(extra.name(3), 0, kGuardGrace + seconds(6));
  ASSERT_TRUE(expired.has_value()) << "the last silent node was never reported lost";
  EXPECT_GE(std::chrono::steady_clock::now() - released, kGuardGrace - seconds(1))
      << "lost before a fresh grace from the release";
  EXPECT_EQ(expired->reason, "NodeLeaseExpired");
  EXPECT_FALSE(monitor.SilenceHeld());
  EXPECT_EQ(reports.Count(extra.name(1)), 0u);
  EXPECT_EQ(reports.Count(extra.name(2)), 0u);
  EXPECT_EQ(GaugeValue(registry, "lockstep_node_silence_held"), 0);
  monitor.Stop();
}

// The controller's wiring without the operator: JobCaches with the monitor set reports the lost
// node in Observed::lost_nodes of the job whose pod is bound to it, and the node index finds the
// job from the node (what the lost handler enqueues).
TEST_F(NodeHealthTest, JobCachesReportTheLostNodeOfAJobsPod) {
  ASSERT_TRUE(testing::InstallCrd().ok());
  kube::testing::TestNamespace ns(client(), "node-health");
  ASSERT_TRUE(ns.status().ok()) << ns.status();
  auto job = client().Create(kube::resources::TrainingJobs(), ns.name(),
                             testing::MakeJob("nh", 1, nullptr));
  ASSERT_TRUE(job.ok()) << job.status();
  const std::string uid = (*job)["metadata"]["uid"];
  // A pod of the job bound to the test's node (nobody runs it: the node is not kwok's).
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", "nh-worker-0"},
                {"labels", {{"lockstep.dev/job-name", "nh"}}},
                {"ownerReferences", json::array({{{"apiVersion", "lockstep.dev/v1alpha1"},
                                                  {"kind", "TrainingJob"},
                                                  {"name", "nh"},
                                                  {"uid", uid},
                                                  {"controller", true}}})}}},
              {"spec",
               {{"nodeName", node_},
                {"containers", json::array({{{"name", "trainer"}, {"image", "busybox"}}})}}}};
  auto created = client().Create(kube::resources::Pods(), ns.name(), pod);
  ASSERT_TRUE(created.ok()) << created.status();

  JobCaches caches(client(), {ns.name()});
  caches.SetNodeHealth(monitor_.get());
  caches.SetHandlers(CacheHandlers{[](auto&) {}, [](auto&) {}, [](auto&, auto&) {},
                                   [](auto&, auto&) {}, [](auto&, auto&) {}, [](auto&) {}});
  // What /readyz names while the operator waits: every cache before its first list, none after.
  // No Secrets: the operator may not list them (job_caches.h).
  EXPECT_EQ(caches.UnsyncedCaches(), ns.name() + "/trainingjobs, " + ns.name() + "/pods, " +
                                         ns.name() + "/services, " + ns.name() +
                                         "/networkpolicies, " + ns.name() + "/endpointslices");
  caches.Start();
  ASSERT_TRUE(caches.WaitForSync(seconds(10)));
  EXPECT_EQ(caches.UnsyncedCaches(), "");
  EXPECT_EQ(monitor_->UnsyncedCaches(), "");
  const std::string key = JobKey(ns.name(), "nh");
  auto cached = caches.GetJob(key);
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(caches.JobsOnNode(node_), std::vector<std::string>{key});
  Observed healthy = caches.ObserveChildren(*cached);
  ASSERT_EQ(healthy.pods.size(), 1u);
  EXPECT_TRUE(healthy.lost_nodes.empty());

  StopRenewing();
  ExpectLost("NodeLeaseExpired", milliseconds(10000));
  Observed lost = caches.ObserveChildren(*cached);
  ASSERT_EQ(lost.lost_nodes.count(node_), 1u);
  EXPECT_EQ(lost.lost_nodes.at(node_).reason, "NodeLeaseExpired");
  EXPECT_EQ(lost.lost_nodes.size(), 1u);
  caches.Stop();
  // No kubelet will confirm a graceful delete: force it, so the namespace goes at once.
  kube::DeleteOptions force;
  force.grace_period_seconds = 0;
  (void)client().Delete(kube::resources::Pods(), ns.name(), "nh-worker-0", force);
}

}  // namespace
}  // namespace lockstep::controller
