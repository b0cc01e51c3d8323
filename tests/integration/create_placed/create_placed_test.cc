// Placed at create (issue 16, docs/scheduler-cycle.md "Created placed") against the real local
// control plane: the built lockstep-operator (gang scheduler on, --create-placed by default) as
// a child process, kwok nodes of each test's own pool (the failure tests' fixture). A pod created
// with spec.nodeName carries it in the managedFields of its create; a pod bound through
// pods/binding does not (the binding writes nodeName past the field manager), which is how the
// tests tell the two paths apart on the stored objects.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/controller/operator_env.h"
#include "tests/integration/failures/failures_env.h"
#include "tests/testing/host_state.h"

namespace lockstep::failures::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The stored pod with its managedFields (which the operator's RestClient drops when it parses),
// read with kubectl.
json PodWithManagedFields(const std::string& ns, const std::string& name) {
  const std::string command = "kubectl get pod -n " + ns + " " + name +
                              " -o json --show-managed-fields 2>/dev/null";
  return json::parse(::lockstep::testing::ShellOutput(command), nullptr,
                     /*allow_exceptions=*/false);
}

// Whether the pod's create wrote spec.nodeName (created placed), from its managedFields.
bool CreatedWithNodeName(const std::string& ns, const json& listed) {
  const json pod = PodWithManagedFields(ns, listed["metadata"]["name"]);
  if (pod.is_discarded()) {
    ADD_FAILURE() << "cannot read pod " << listed["metadata"]["name"];
    return false;
  }
  for (const json& entry : pod["metadata"].value("managedFields", json::array())) {
    const json& fields = entry.value("fieldsV1", json::object());
    if (fields.contains("f:spec") && fields["f:spec"].contains("f:nodeName")) return true;
  }
  return false;
}

int64_t Gpus(const json& pod) {
  int64_t sum = 0;
  for (const json& c : pod["spec"]["containers"]) {
    const json r = c.value("resources", json::object()).value("requests", json::object());
    if (r.contains("nvidia.com/gpu")) sum += std::stoll(r["nvidia.com/gpu"].get<std::string>());
  }
  return sum;
}

// A ValidatingAdmissionPolicy (CEL, in the apiserver) that refuses, in namespace `ns`, every pod
// CREATE whose object fails `expression`; removed with this object. A create the apiserver
// refuses, without a mock.
class RefusePodCreates {
 public:
  RefusePodCreates(const std::string& ns, const std::string& expression,
                   const std::string& message)
      : ns_(ns), name_("lockstep-refuse-pods-" + kube::testing::RandomSuffix()) {
    ok_ = controller::testing::ApplyDenyPolicy(name_, ns, {"", "v1", "CREATE", "pods"}, expression,
                                               message);
  }
  ~RefusePodCreates() { controller::testing::DeleteDenyPolicy(name_); }
  bool ok() const { return ok_; }
  // The policy applies once the apiserver's admission plugin has seen it: a server-side dry run
  // of a placed pod named `pod` is refused.
  bool WaitEnforced(const std::string& pod) {
    const std::string manifest =
        json({{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", pod}, {"namespace", ns_}}},
              {"spec",
               {{"nodeName", "nowhere"},
                {"containers", json::array({{{"name", "c"}, {"image", "img"}}})}}}})
            .dump();
    return kube::testing::WaitFor(
        [&] {
          return controller::testing::Kubectl("create --dry-run=server -f - >/dev/null 2>&1 "
                                              "<<'EOF'\n" + manifest + "\nEOF") != 0;
        },
        seconds(30), std::chrono::milliseconds(200));
  }

 private:
  std::string ns_;
  std::string name_;
  bool ok_ = false;
};

class CreatePlacedTest : public FailuresTest {
 protected:
  // Creates `count` 8-GPU nodes and waits until the operator's scheduler counts them (its
  // lockstep_gpus gauge, refreshed once per 1 s tick, long after kwok marked them Ready): a job
  // created before the scheduler's caches show its nodes does not fit there yet and is bound
  // later instead, a fallback these tests do not look at.
  std::vector<std::string> CreateNodesSeen(int count) {
    std::vector<std::string> nodes = CreateNodes(count);
    // Every node's GPUs as the API holds them now (other tests' nodes come and go meanwhile).
    const auto api_gpus = [&] {
      double sum = 0;
      StatusOr<kube::ListResult> list = client().List(kube::resources::Nodes(), "", {});
      if (!list.ok()) return 1e18;
      for (const json& node : list->items) {
        const json alloc = node["status"].value("allocatable", json::object());
        if (alloc.contains("nvidia.com/gpu")) {
          sum += std::stod(alloc["nvidia.com/gpu"].get<std::string>());
        }
      }
      return sum;
    };
    EXPECT_TRUE(kube::testing::WaitFor(
        [&] { return Metric("lockstep_gpus", {{"state", "allocatable"}}) >= api_gpus(); },
        seconds(30), std::chrono::milliseconds(100)));
    // The gauge counts a node whatever its Ready condition, and other tests' deleted nodes may
    // still be in it; kwok's Ready update follows a node's creation by milliseconds. Two ticks
    // more for the scheduler's node cache to hold them Ready, even on a loaded machine.
    std::this_thread::sleep_for(seconds(2));
    return nodes;
  }

  // GPUs requested by live pods per node, over every pod of `jobs`.
  std::map<std::string, int64_t> GpusByNode(const std::vector<std::string>& jobs) {
    std::map<std::string, int64_t> out;
    for (const std::string& job : jobs) {
      for (const json& pod : Pods(job)) {
        const std::string node = pod["spec"].value("nodeName", "");
        const std::string phase = pod["status"].value("phase", "");
        if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
        out[node] += Gpus(pod);
      }
    }
    return out;
  }
};

TEST_F(CreatePlacedTest, AWholeGangIsCreatedPlacedOnFeasibleNodes) {
  const std::vector<std::string> nodes = CreateNodesSeen(4);
  const double placed_before = Metric("lockstep_create_placed_total", {{"result", "placed"}});
  CreateJob(MakeJob("placed", 3));
  ASSERT_TRUE(WaitRunningAttempt("placed", 0, 3, seconds(60)).has_value());
  std::set<std::string> used;
  for (const json& pod : Pods("placed")) {
    SCOPED_TRACE(pod["metadata"]["name"].get<std::string>());
    EXPECT_TRUE(CreatedWithNodeName(ns(), pod)) << "bound afterwards, not created placed";
    const std::string node = pod["spec"]["nodeName"];
    EXPECT_NE(std::find(nodes.begin(), nodes.end(), node), nodes.end()) << node;
    used.insert(node);
  }
  EXPECT_EQ(used.size(), 3u) << "8-GPU pods on 8-GPU nodes: one per node";
  EXPECT_GE(Metric("lockstep_create_placed_total", {{"result", "placed"}}), placed_before + 1);
  // The scheduler, the one author of Scheduled, says the gang was placed.
  StatusOr<json> job = WaitForJob(
      "placed",
      [](const json& j) {
        return controller::testing::ConditionStatus(j, "Scheduled") == "True" &&
               controller::testing::ConditionReason(j, "Scheduled") == "GangPlaced";
      },
      seconds(30));
  EXPECT_TRUE(job.ok()) << job.status();
}

// The apiserver refuses the third pod's create while it carries spec.nodeName: the two created
// are deleted (no partial gang), and the attempt is created unplaced and bound whole instead.
TEST_F(CreatePlacedTest, AGangWhoseCreateFailsMidwayIsUndoneAndPlacedWhole) {
  CreateNodesSeen(3);
  const std::string job_name = "undo-" + pool();
  RefusePodCreates refuse(
      ns(), "!(has(object.spec.nodeName) && object.metadata.name == '" + job_name + "-worker-2')",
      "test: no placed create for worker 2");
  ASSERT_TRUE(refuse.ok());
  ASSERT_TRUE(refuse.WaitEnforced(job_name + "-worker-2"));
  const double undone_before = Metric("lockstep_create_placed_total", {{"result", "undone"}});
  CreateJob(MakeJob(job_name, 3));
  ASSERT_TRUE(WaitRunningAttempt(job_name, 0, 3, seconds(90)).has_value());
  for (const json& pod : Pods(job_name)) {
    EXPECT_FALSE(CreatedWithNodeName(ns(), pod)) << "the attempt falls back to the binding path";
  }
  EXPECT_GE(Metric("lockstep_create_placed_total", {{"result", "undone"}}), undone_before + 1);
  EXPECT_FALSE(WaitEvent(job_name, "CreatePlacedUndone").is_null());
  std::map<std::string, int64_t> gpus = GpusByNode({job_name});
  for (const auto& [node, used] : gpus) EXPECT_LE(used, 8) << node;
}

// Two gangs, room for one: whichever is placed first, the other waits, and no node ever holds
// more than its GPUs, sampled while both are being created and placed.
TEST_F(CreatePlacedTest, TwoJobsRacingForTheLastCapacityNeverDoubleBook) {
  CreateNodesSeen(2);
  const std::string a = "race-a-" + pool(), b = "race-b-" + pool();
  std::thread other([&] { CreateJob(MakeJob(b, 2)); });
  CreateJob(MakeJob(a, 2));
  other.join();
  int running = 0;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& [node, used] : GpusByNode({a, b})) {
      ASSERT_LE(used, 8) << node << " double-booked";
    }
    running = static_cast<int>(!RunningAttempt(a, 0, 2).empty()) +
              static_cast<int>(!RunningAttempt(b, 0, 2).empty());
    if (running == 1 && std::chrono::steady_clock::now() > deadline - seconds(20)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(running, 1) << "one gang runs, the other waits";
  const bool a_runs = !RunningAttempt(a, 0, 2).empty();
  const std::string loser = a_runs ? b : a;
  for (const json& pod : Pods(loser)) EXPECT_EQ(pod["spec"].value("nodeName", ""), "");
  // The winner leaves; the waiting gang is placed in its capacity.
  ASSERT_TRUE(client().Delete(kube::resources::TrainingJobs(), ns(), a_runs ? a : b).ok());
  EXPECT_TRUE(WaitRunningAttempt(loser, 0, 2, seconds(60)).has_value());
  for (const auto& [node, used] : GpusByNode({a, b})) EXPECT_LE(used, 8) << node;
}

}  // namespace
}  // namespace lockstep::failures::testing
