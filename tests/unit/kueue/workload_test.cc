// The Workload a job stands for, what the operator reads back from Kueue's objects, and what an
// admission adds to the pods.
#include "operator/kueue/workload.h"

#include <gtest/gtest.h>

#include "operator/api/children.h"
#include "operator/kueue/admission.h"
#include "operator/kueue/gate.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace lockstep::kueue {
namespace {

using nlohmann::json;
using testing::Container;
using testing::Job;
using testing::StoredWorkload;
using testing::View;

api::TrainingJob JobWithLeader() {
  api::TrainingJob j = Job();
  api::Role head;
  head.name = "launcher";  // a leader role goes first, as its pod takes node rank 0
  head.replicas = 1;
  head.pod_template = {{"spec", {{"containers", json::array({Container("0")})}}}};
  j.spec.roles.push_back(head);
  api::Role ps;
  ps.name = "ps";
  ps.replicas = 0;  // no pods: no PodSet
  ps.pod_template = head.pod_template;
  j.spec.roles.push_back(ps);
  return j;
}

TEST(BuildWorkloadTest, OnePodSetPerRoleInRankOrderWithTheUsersTemplate) {
  const json w = BuildWorkload(JobWithLeader(), 0);
  ASSERT_EQ(w["spec"]["podSets"].size(), 2u);
  EXPECT_EQ(w["spec"]["podSets"][0]["name"], "launcher");
  EXPECT_EQ(w["spec"]["podSets"][0]["count"], 1);
  EXPECT_EQ(w["spec"]["podSets"][1]["name"], "worker");
  EXPECT_EQ(w["spec"]["podSets"][1]["count"], 2);
  EXPECT_EQ(w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["name"], "trainer");
  EXPECT_EQ(w["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(w["metadata"]["namespace"], "ns");
  EXPECT_EQ(w["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], Job().metadata.uid);
  EXPECT_FALSE(w["spec"].contains("priorityClassRef"));
}

TEST(BuildWorkloadTest, AWorkloadPriorityClassLabelWinsOverThePodPriorityClass) {
  api::TrainingJob j = Job();
  j.spec.priority_class_name = "high";
  json w = BuildWorkload(j, 1000);
  EXPECT_EQ(w["spec"]["priorityClassRef"]["kind"], "PriorityClass");
  EXPECT_EQ(w["spec"]["priorityClassRef"]["group"], "scheduling.k8s.io");
  EXPECT_EQ(w["spec"]["priority"], 1000);
  // The pods get the class through their template, so Kueue sees it there too.
  EXPECT_EQ(w["spec"]["podSets"][0]["template"]["spec"]["priorityClassName"], "high");
  j.metadata.labels[std::string(kPriorityClassLabel)] = "team-urgent";
  w = BuildWorkload(j, 5);
  EXPECT_EQ(w["spec"]["priorityClassRef"]["kind"], "WorkloadPriorityClass");
  EXPECT_EQ(w["spec"]["priorityClassRef"]["name"], "team-urgent");
  EXPECT_EQ(w["spec"]["priority"], 5);
}

TEST(BuildWorkloadTest, ASuspendedJobsWorkloadIsInactive) {
  api::TrainingJob j = Job();
  j.spec.run_policy.suspend = true;
  EXPECT_EQ(BuildWorkload(j, 0)["spec"]["active"], false);
}

TEST(BuildWorkloadTest, TheNameIsTheJobsAndItsUid) {
  api::TrainingJob a = Job();
  api::TrainingJob b = Job();
  b.metadata.uid = "ffee0000-1111-2222-3333-444455556666";
  EXPECT_EQ(WorkloadName(a), "trainingjob-train-0a1b2");
  EXPECT_EQ(WorkloadName(b), "trainingjob-train-ffee0");
}

TEST(QueueNameTest, OnlyTheLabelMakesAJobKueues) {
  api::TrainingJob j = Job();
  EXPECT_EQ(QueueName(j), "team-a");
  j.metadata.labels.clear();
  EXPECT_EQ(QueueName(j), "");
  EXPECT_FALSE(PriorityClassOf(j).has_value());
}

TEST(MatchesJobTest, ItsOwnWorkloadMatchesAndAnyChangeOfShapeDoesNot) {
  const api::TrainingJob j = JobWithLeader();
  const WorkloadView w = View(StoredWorkload(j));
  EXPECT_TRUE(MatchesJob(w, j));
  api::TrainingJob more = j;
  more.spec.replicas = 3;
  EXPECT_FALSE(MatchesJob(w, more));
  api::TrainingJob bigger = j;
  bigger.spec.pod_template["spec"]["containers"][0] = Container("8");
  EXPECT_FALSE(MatchesJob(w, bigger));
  api::TrainingJob relabelled = j;  // labels are not the quota's business
  relabelled.spec.pod_template["metadata"]["labels"]["team"] = "a";
  EXPECT_TRUE(MatchesJob(w, relabelled));
}

// Issue 44 item 4: a spare holds a node's GPUs the whole run, so Kueue must charge it. Spares
// join the worker PodSet (the workers' flavor and topology domain); a Workload made before a
// job asked for spares no longer matches it, so the gate replaces it.
TEST(BuildWorkloadTest, HotSparesAreChargedInTheWorkerPodSet) {
  api::TrainingJob j = JobWithLeader();
  j.spec.failure_policy.spare_replicas = 2;
  const json w = BuildWorkload(j, 0);
  ASSERT_EQ(w["spec"]["podSets"].size(), 2u);
  EXPECT_EQ(w["spec"]["podSets"][0]["name"], "launcher");
  EXPECT_EQ(w["spec"]["podSets"][0]["count"], 1);  // spares are workers, not leaders
  EXPECT_EQ(w["spec"]["podSets"][1]["name"], "worker");
  EXPECT_EQ(w["spec"]["podSets"][1]["count"], 2 + 2);

  const WorkloadView without_spares = View(StoredWorkload(JobWithLeader()));
  EXPECT_FALSE(MatchesJob(without_spares, j));
  EXPECT_TRUE(MatchesJob(View(StoredWorkload(j)), j));
}

TEST(DecodeWorkloadTest, ReadsConditionsAdmissionAndOwner) {
  const WorkloadView w =
      View(StoredWorkload(Job(), {{"QuotaReserved", "True"}, {"Admitted", "True"}}, "cq"));
  EXPECT_EQ(w.owner_uid, Job().metadata.uid);
  EXPECT_TRUE(w.IsTrue(kAdmitted));
  EXPECT_FALSE(w.IsTrue(kEvicted));
  ASSERT_TRUE(w.admission.has_value());
  EXPECT_EQ(w.admission->cluster_queue, "cq");
  EXPECT_EQ(w.admission->pod_sets[0].flavors.at("nvidia.com/gpu"), "gpu");
  EXPECT_EQ(w.queue_name, "team-a");
}

TEST(DecodeWorkloadTest, AnAdmissionItCannotReadIsAnErrorNotAnEmptyAdmission) {
  json w = StoredWorkload(Job(), {}, "cq");
  w["status"]["admission"]["podSetAssignments"] = "everything";
  EXPECT_FALSE(DecodeWorkload(w).ok());
  w = StoredWorkload(Job(), {}, "cq");
  w["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] = 7;
  EXPECT_FALSE(DecodeWorkload(w).ok());
  EXPECT_FALSE(DecodeWorkload(json::object()).ok());
}

TEST(DecodeFlavorTest, NodeLabelsAndTolerations) {
  StatusOr<Flavor> f = DecodeFlavor(
      {{"spec", {{"nodeLabels", {{"pool", "a"}}}, {"tolerations", json::array({{{"key", "k"}}})}}}});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->node_labels.at("pool"), "a");
  EXPECT_EQ(f->tolerations.size(), 1u);
  EXPECT_TRUE(DecodeFlavor(json::object()).ok());  // a flavor may add nothing
  EXPECT_FALSE(DecodeFlavor({{"spec", {{"tolerations", "all"}}}}).ok());
}

TEST(PlacementsOfTest, FlavorsOfOnePodSetMergeAndAConflictIsAnError) {
  json w = StoredWorkload(Job(), {}, "cq");
  w["status"]["admission"]["podSetAssignments"][0]["flavors"] = {{"nvidia.com/gpu", "gpu"},
                                                                 {"cpu", "spot"}};
  std::map<std::string, Flavor> flavors = {
      {"gpu", Flavor{{{"pool", "a100"}}, json::array()}},
      {"spot", Flavor{{{"lifecycle", "spot"}}, json::array({{{"key", "spot"}}})}}};
  StatusOr<std::map<std::string, api::RolePlacement>> p = PlacementsOf(View(w), flavors);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->at("worker").node_selector,
            (std::map<std::string, std::string>{{"lifecycle", "spot"}, {"pool", "a100"}}));
  flavors["spot"].node_labels["pool"] = "h100";
  EXPECT_FALSE(PlacementsOf(View(w), flavors).ok());
  EXPECT_FALSE(PlacementsOf(View(StoredWorkload(Job())), flavors).ok());  // no admission
}

TEST(RolePlacementTest, ThePodsGetTheAdmittedNodeLabelsTolerationsAndPodSetLabel) {
  api::TrainingJob j = Job();
  j.spec.pod_template["spec"]["nodeSelector"] = {{"zone", "z1"}};
  api::ChildrenOptions opts;
  opts.launcher_image = "launcher:dev";
  api::RolePlacement p;
  p.node_selector = {{"pool", "a100"}};
  p.tolerations = json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}});
  p.labels = {{std::string(kPodSetLabel), "worker"}};
  opts.role_placement["worker"] = p;
  StatusOr<std::vector<json>> pods = api::BuildPods(j, opts);
  ASSERT_TRUE(pods.ok()) << pods.status();
  const json& pod = (*pods)[1];
  EXPECT_EQ(pod["spec"]["nodeSelector"], (json{{"pool", "a100"}, {"zone", "z1"}}));
  EXPECT_EQ(pod["spec"]["tolerations"].size(), 1u);
  EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/podset"], "worker");
  // A template that pins another pool cannot run where Kueue admitted it.
  j.spec.pod_template["spec"]["nodeSelector"]["pool"] = "h100";
  StatusOr<std::vector<json>> refused = api::BuildPods(j, opts);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pool=a100"), std::string::npos)
      << refused.status();
}

TEST(BuildWorkloadTest, PlacementBecomesTheTopologyRequest) {
  api::TrainingJob j = Job();
  EXPECT_FALSE(BuildWorkload(j, 0)["spec"]["podSets"][0].contains("topologyRequest"));
  j.spec.placement = api::Placement{{"topology.lockstep.dev/block", "topology.lockstep.dev/rack"},
                                    std::nullopt};
  EXPECT_EQ(BuildWorkload(j, 0)["spec"]["podSets"][0]["topologyRequest"],
            (json{{"preferred", "topology.lockstep.dev/rack"}}));
  j.spec.placement->required_topology_key = "topology.lockstep.dev/block";
  EXPECT_EQ(BuildWorkload(j, 0)["spec"]["podSets"][0]["topologyRequest"],
            (json{{"required", "topology.lockstep.dev/block"}}));
}

// Kueue's compressed form: one slice of 2 racks in one block (universal block, individual racks
// with a prefix), 1 pod each.
json RackAssignment() {
  return {{"levels", {"topology.lockstep.dev/block", "topology.lockstep.dev/rack"}},
          {"slices",
           json::array({{{"domainCount", 2},
                         {"valuesPerLevel",
                          json::array({{{"universal", "b1"}},
                                       {{"individual", {{"prefix", "rack-"}, {"roots", {"1", "2"}}}}}})},
                         {"podCounts", {{"universal", 1}}}}})}};
}

TEST(DecodeWorkloadTest, ATopologyAssignmentIsExpanded) {
  json w = StoredWorkload(Job(), {}, "cq");
  w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = RackAssignment();
  const WorkloadView v = View(w);
  ASSERT_TRUE(v.admission->pod_sets[0].topology.has_value());
  const TopologyAssignment& t = *v.admission->pod_sets[0].topology;
  ASSERT_EQ(t.domains.size(), 2u);
  EXPECT_EQ(t.domains[0].values, (std::vector<std::string>{"b1", "rack-1"}));
  EXPECT_EQ(t.domains[1].values, (std::vector<std::string>{"b1", "rack-2"}));
  EXPECT_EQ(t.domains[1].pods, 1);
  // Roots that do not match the domain count are an error, not a guess.
  w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["slices"][0]["domainCount"] = 3;
  EXPECT_FALSE(DecodeWorkload(w).ok());
}

TEST(DomainTermsTest, RacksAreMatchedWithTheirBlockAndHostsByName) {
  json w = StoredWorkload(Job(), {}, "cq");
  w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = RackAssignment();
  json terms = DomainTerms(*View(w).admission->pod_sets[0].topology);
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[1]["matchExpressions"][1],
            (json{{"key", "topology.lockstep.dev/rack"}, {"operator", "In"}, {"values", {"rack-2"}}}));
  EXPECT_EQ(terms[1]["matchExpressions"][0]["values"], json({"b1"}));
  TopologyAssignment hosts{{"topology.lockstep.dev/rack", "kubernetes.io/hostname"},
                           {{{"r1", "n2"}, 1}, {{"r1", "n1"}, 1}}};
  terms = DomainTerms(hosts);
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0]["matchExpressions"][0]["values"], json({"n1", "n2"}));
}

TEST(RolePlacementTest, DomainTermsAreAndedWithTheTemplatesOwnAffinity) {
  api::TrainingJob j = Job();
  j.spec.pod_template["spec"]["affinity"]["nodeAffinity"]
                     ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      json::array({{{"matchExpressions", json::array({{{"key", "gpu"}, {"operator", "Exists"}}})}}});
  api::ChildrenOptions opts;
  opts.launcher_image = "launcher:dev";
  api::RolePlacement p;
  p.node_terms = json::array(
      {{{"matchExpressions", json::array({{{"key", "rack"}, {"operator", "In"}, {"values", {"r1"}}}})}},
       {{"matchExpressions", json::array({{{"key", "rack"}, {"operator", "In"}, {"values", {"r2"}}}})}}});
  opts.role_placement["worker"] = p;
  StatusOr<std::vector<json>> pods = api::BuildPods(j, opts);
  ASSERT_TRUE(pods.ok()) << pods.status();
  const json terms = (*pods)[0]["spec"]["affinity"]["nodeAffinity"]
                                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);  // (gpu) and (r1 or r2) = (gpu and r1) or (gpu and r2)
  for (const json& t : terms) {
    ASSERT_EQ(t["matchExpressions"].size(), 2u);
    EXPECT_EQ(t["matchExpressions"][0]["key"], "gpu");
  }
  EXPECT_EQ(terms[1]["matchExpressions"][1]["values"], json({"r2"}));
}

}  // namespace
}  // namespace lockstep::kueue
