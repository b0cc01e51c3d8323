#include "tests/integration/scheduler/scheduler_env.h"

#include <cstdlib>
#include <thread>

#include "operator/api/children.h"

namespace lockstep::scheduler::testing {
namespace {

using nlohmann::json;
using kube::testing::WaitFor;

const kube::ResourceRef kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};

// Installs the CRD from crds/ once per cluster (kubectl parses the YAML), then waits until the
// API serves TrainingJobs.
void EnsureCrd(kube::RestClient& client) {
  if (!client.Get(kCrds, "", "trainingjobs.lockstep.dev").ok()) {
    const std::string cmd = "kubectl apply --server-side --force-conflicts -f " +
                            std::string(LOCKSTEP_SOURCE_DIR) +
                            "/crds/lockstep.dev_trainingjobs.yaml >&2";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  ASSERT_TRUE(WaitFor(
      [&] { return client.List(kube::resources::TrainingJobs(), "default").ok(); },
      std::chrono::seconds(30)));
}

json Resources(int gpus) {
  json r = {{"cpu", "1"}, {"memory", "1Gi"}};
  if (gpus > 0) r["nvidia.com/gpu"] = std::to_string(gpus);
  return r;
}

json Container(int gpus) {
  return {{"name", "trainer"},
          {"image", "busybox"},
          {"command", {"sleep", "3600"}},
          {"resources", {{"requests", Resources(gpus)}, {"limits", Resources(gpus)}}}};
}

bool NodeReady(kube::RestClient& client, const std::string& name) {
  StatusOr<json> node = client.Get(kube::resources::Nodes(), "", name);
  if (!node.ok()) return false;
  for (const json& c : node->value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

}  // namespace

void SchedulerTest::SetUp() {
  LS_REQUIRE_CLUSTER();
  StatusOr<kube::testing::Cluster> cluster = kube::testing::Connect();
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  cluster_ = std::move(cluster).value();
  EnsureCrd(client());
  ns_ = std::make_unique<kube::testing::TestNamespace>(client(), "sched");
  ASSERT_TRUE(ns_->status().ok()) << ns_->status().ToString();
}

void SchedulerTest::TearDown() {
  if (scheduler_) scheduler_->Stop();
  scheduler_.reset();
  ns_.reset();
  for (const std::string& node : nodes_) {
    client().Delete(kube::resources::Nodes(), "", node).status().IgnoreError();
  }
  for (const std::string& pc : priority_classes_) {
    client().Delete(PriorityClasses(), "", pc).status().IgnoreError();
  }
}

std::string SchedulerTest::CreatePriorityClass(const std::string& name, int value,
                                               bool never_preempts) {
  const std::string full = ns() + "-" + name;
  json pc = {{"apiVersion", "scheduling.k8s.io/v1"},
             {"kind", "PriorityClass"},
             {"metadata", {{"name", full}}},
             {"value", value}};
  if (never_preempts) pc["preemptionPolicy"] = "Never";
  StatusOr<json> created = client().Create(PriorityClasses(), "", pc);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  priority_classes_.push_back(full);
  return full;
}

std::vector<std::string> SchedulerTest::CreateNodes(const std::vector<NodeSpec>& specs) {
  std::vector<std::string> names;
  for (const NodeSpec& spec : specs) {
    const std::string name = ns() + "-n" + std::to_string(nodes_.size());
    json labels = {{"kubernetes.io/hostname", name}, {kPoolLabel, ns()}};
    if (!spec.block.empty()) labels[std::string(kBlockKey)] = spec.block;
    if (!spec.rack.empty()) labels[std::string(kRackKey)] = spec.rack;
    json annotations = {{"node.alpha.kubernetes.io/ttl", "0"}};
    if (spec.kwok) annotations["kwok.x-k8s.io/node"] = "fake";
    const json capacity = {{"cpu", "96"}, {"memory", "1536Gi"}, {"pods", "110"},
                           {"nvidia.com/gpu", std::to_string(spec.gpus)}};
    json node_spec = json::object();
    if (spec.cordoned) node_spec["unschedulable"] = true;
    if (spec.taint_key) {
      node_spec["taints"] = {{{"key", *spec.taint_key}, {"value", "x"}, {"effect", "NoSchedule"}}};
    }
    const json metadata = {{"name", name}, {"labels", labels}, {"annotations", annotations}};
    const json node = {{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", metadata},
                       {"spec", node_spec},
                       {"status", {{"capacity", capacity}, {"allocatable", capacity}}}};
    StatusOr<json> created = client().Create(kube::resources::Nodes(), "", node);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    nodes_.push_back(name);
    names.push_back(name);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].kwok) continue;
    EXPECT_TRUE(WaitFor([&] { return NodeReady(client(), names[i]); }, std::chrono::seconds(60)))
        << names[i] << " never became Ready";
  }
  return names;
}

std::vector<std::string> SchedulerTest::CreateTopology(int blocks, int racks, int per_rack,
                                                       int gpus) {
  std::vector<NodeSpec> specs;
  for (int b = 0; b < blocks; ++b) {
    for (int r = 0; r < racks; ++r) {
      for (int n = 0; n < per_rack; ++n) {
        NodeSpec spec;
        spec.block = "block-" + std::to_string(b);
        spec.rack = spec.block + "-rack-" + std::to_string(r);
        spec.gpus = gpus;
        specs.push_back(spec);
      }
    }
  }
  return CreateNodes(specs);
}

void SchedulerTest::StartScheduler() {
  SchedulerOptions options;
  options.namespace_filter = ns();
  options.reserve_after = std::chrono::seconds(3600);  // reservation has unit tests; keep it off
  options.capacity_period = std::chrono::seconds(1);   // elastic answers without a 5 s wait
  scheduler_ = std::make_unique<GangScheduler>(client(), registry_, options);
  scheduler_->Start();
  // The lists name themselves in the log when slow ("slow list", reflector.cc); CI once waited
  // 60 s here with nothing logged.
  ASSERT_TRUE(scheduler_->WaitForSync(std::chrono::seconds(60)))
      << "caches not synced in 60 s: " << scheduler_->UnsyncedCaches();
}

void SchedulerTest::CreateJob(const std::string& name, const JobSpec& spec, bool with_pods) {
  json job_spec = {{"framework", "Generic"},
                   {"replicas", spec.replicas},
                   {"template", {{"spec", {{"containers", {Container(spec.gpus_per_pod)}}}}}}};
  if (!spec.topology_keys.empty() || !spec.required_topology_key.empty()) {
    json placement = {{"topologyKeys", spec.topology_keys}};
    if (!spec.required_topology_key.empty()) {
      placement["requiredTopologyKey"] = spec.required_topology_key;
    }
    job_spec["placement"] = placement;
  }
  if (!spec.priority_class.empty()) job_spec["priorityClassName"] = spec.priority_class;
  if (spec.min_replicas > 0) {
    job_spec["elastic"] = {{"minReplicas", spec.min_replicas}, {"maxReplicas", spec.replicas}};
  }
  const json job = {{"apiVersion", "lockstep.dev/v1alpha1"},
                    {"kind", "TrainingJob"},
                    {"metadata", {{"name", name}, {"namespace", ns()}}},
                    {"spec", job_spec}};
  StatusOr<json> created = client().Create(kube::resources::TrainingJobs(), ns(), job);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  job_uids_[name] = (*created)["metadata"]["uid"].get<std::string>();
  if (with_pods) CreatePods(name, spec);
}

std::vector<json> SchedulerTest::PodObjects(const std::string& job, const JobSpec& spec) {
  std::vector<json> pods;
  for (int i = 0; i < spec.replicas; ++i) {
    const json labels = {{std::string(api::kLabelJobName), job},
                         {std::string(api::kLabelRole), "worker"},
                         {std::string(api::kLabelReplicaIndex), std::to_string(i)},
                         {std::string(api::kLabelAttempt), std::to_string(spec.attempt)}};
    const std::string suffix = spec.attempt > 0 ? "-a" + std::to_string(spec.attempt) : "";
    const json owner = {{"apiVersion", "lockstep.dev/v1alpha1"}, {"kind", "TrainingJob"},
                        {"name", job}, {"uid", job_uids_.at(job)}, {"controller", true}};
    json container = Container(spec.gpus_per_pod);
    if (spec.host_port > 0) {
      container["ports"] = {{{"containerPort", spec.host_port}, {"hostPort", spec.host_port}}};
    }
    json pod_spec = {{"schedulerName", "lockstep"},
                     {"nodeSelector", {{kPoolLabel, ns()}}},
                     {"containers", {container}}};
    pod_spec.merge_patch(spec.pod_spec_patch);
    // As the operator's pods do (api::BuildPod): the scheduler ranks a gang by the priority the
    // apiserver admitted for its pods, not by the job's field.
    const std::string& pod_class =
        spec.pod_priority_class.empty() ? spec.priority_class : spec.pod_priority_class;
    if (!pod_class.empty()) pod_spec["priorityClassName"] = pod_class;
    pods.push_back({{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata",
                     {{"name", job + "-worker-" + std::to_string(i) + suffix},
                      {"namespace", ns()},
                      {"labels", labels},
                      {"ownerReferences", {owner}}}},
                    {"spec", std::move(pod_spec)}});
  }
  return pods;
}

void SchedulerTest::CreatePods(const std::string& job, const JobSpec& spec) {
  for (const json& pod : PodObjects(job, spec)) {
    StatusOr<json> created = client().Create(kube::resources::Pods(), ns(), pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
}

void SchedulerTest::CreateForeignPod(const std::string& name, const std::string& node, int gpus,
                                     int host_port) {
  json container = Container(gpus);
  if (host_port > 0) {
    container["ports"] = {{{"containerPort", host_port}, {"hostPort", host_port}}};
  }
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", name}}},
                    {"spec",
                     {{"schedulerName", "someone-else"},
                      {"nodeName", node},
                      {"containers", {container}}}}};
  StatusOr<json> created = client().Create(kube::resources::Pods(), ns(), pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
}

void SchedulerTest::DeletePods(const std::string& job) {
  for (const auto& [pod, node] : Placement(job)) {
    kube::DeleteOptions options;
    options.grace_period_seconds = 0;
    ASSERT_TRUE(client().Delete(kube::resources::Pods(), ns(), pod, options).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return Placement(job).empty(); }, std::chrono::seconds(60)));
}

void SchedulerTest::ApplyControllerStatus(const std::string& job, const json& status) {
  kube::RestOptions options = kube::testing::NoLimits();
  options.field_manager = "lockstep";
  StatusOr<kube::testing::Cluster> controller = kube::testing::Connect(options);
  ASSERT_TRUE(controller.ok()) << controller.status().ToString();
  const json body = {{"apiVersion", "lockstep.dev/v1alpha1"},
                     {"kind", "TrainingJob"},
                     {"metadata", {{"name", job}, {"namespace", ns()}}},
                     {"status", status}};
  StatusOr<json> applied = controller->client->Apply(kube::resources::TrainingJobs(), ns(), job,
                                                     body, /*force=*/true, "status");
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
}

int SchedulerTest::FeasibleReplicas(const std::string& job) {
  StatusOr<json> got = client().Get(kube::resources::TrainingJobs(), ns(), job);
  if (!got.ok()) return -1;
  return got->value("/status/capacity/feasibleReplicas"_json_pointer, -1);
}

std::map<std::string, std::string> SchedulerTest::Placement(const std::string& job) {
  kube::ListOptions options;
  options.label_selector = std::string(api::kLabelJobName) + "=" + job;
  std::map<std::string, std::string> out;
  StatusOr<kube::ListResult> list = client().List(kube::resources::Pods(), ns(), options);
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  if (!list.ok()) return out;
  for (const json& pod : list->items) {
    out[pod["metadata"]["name"].get<std::string>()] =
        pod["spec"].value("nodeName", std::string());
  }
  return out;
}

int SchedulerTest::BoundCount(const std::string& job) {
  int n = 0;
  for (const auto& [pod, node] : Placement(job)) n += node.empty() ? 0 : 1;
  return n;
}

bool SchedulerTest::WaitAllBound(const std::string& job, int count,
                                 std::chrono::seconds timeout) {
  return WaitFor([&] { return BoundCount(job) == count; }, timeout,
                 std::chrono::milliseconds(100));
}

bool SchedulerTest::WaitUnplacedThroughCycles(const std::string& job, int cycles) {
  const auto unplaced = [&] {
    return ScheduledCondition(job).value("reason", "") == "InsufficientResources";
  };
  if (!WaitFor(unplaced, std::chrono::seconds(30))) return false;
  const int64_t until = scheduler_->cycles() + cycles;
  return WaitFor([&] { return scheduler_->cycles() >= until; }, std::chrono::seconds(30),
                 std::chrono::milliseconds(50));
}

json SchedulerTest::ScheduledCondition(const std::string& job) {
  return Condition(job, "Scheduled");
}

json SchedulerTest::Condition(const std::string& job, const std::string& type) {
  StatusOr<json> got = client().Get(kube::resources::TrainingJobs(), ns(), job);
  if (!got.ok()) return json::object();
  for (const json& c : got->value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return json::object();
}

json SchedulerTest::NodeLabels(const std::string& node) {
  StatusOr<json> got = client().Get(kube::resources::Nodes(), "", node);
  return got.ok() ? (*got)["metadata"]["labels"] : json::object();
}

}  // namespace lockstep::scheduler::testing
