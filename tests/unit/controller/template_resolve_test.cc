// The template step of a pass (operator/controller/template_resolve.h): a job naming a template
// is merged with the live one until its first pods, then with its snapshot only; a missing
// template holds it with a condition naming it.

#include "operator/controller/template_resolve.h"

#include <gtest/gtest.h>

#include "operator/api/codec.h"
#include "operator/api/conditions.h"
#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using nlohmann::json;
using State = TemplateResolution::State;
using testing::T0;

json StoredJob(json status = nullptr) {
  json job = {{"apiVersion", "lockstep.dev/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata",
               {{"name", "job"},
                {"namespace", "ns"},
                {"uid", "uid-1"},
                {"resourceVersion", "10"},
                {"generation", 1}}},
              {"spec",
               {{"templateRef", {{"name", "pytorch"}}},
                {"replicas", 2},
                {"template",
                 {{"spec", {{"containers", {{{"name", "trainer"}, {"command", {"train"}}}}}}}}}}}};
  if (!status.is_null()) job["status"] = std::move(status);
  return job;
}

CachedTemplate Template(const std::string& image, int64_t generation = 1) {
  CachedTemplate t;
  t.meta.name = "pytorch";
  t.meta.uid = "tmpl-uid";
  t.meta.resource_version = "77";
  t.meta.generation = generation;
  t.spec = {{"framework", "PyTorch"},
            {"template",
             {{"spec",
               {{"containers",
                 {{{"name", "trainer"},
                   {"image", image},
                   {"env", {{{"name", "NCCL_DEBUG"}, {"value", "WARN"}}}}}}}}}}}};
  return t;
}

CachedJob Decode(const json& object) {
  StatusOr<CachedJob> job = DecodeCachedJob(object);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : CachedJob{};
}

TEST(TemplateResolveTest, AJobWithoutTemplateRefIsLeftAlone) {
  CachedJob job = testing::Job();
  const CachedJob before = job;
  const TemplateResolution r = ResolveTemplate(nullptr, true, T0(), &job);
  EXPECT_EQ(r.state, State::kNone);
  EXPECT_EQ(api::EncodeSpec(job.job.spec), api::EncodeSpec(before.job.spec));
}

TEST(TemplateResolveTest, AWaitingJobMergesTheLiveTemplate) {
  CachedJob job = Decode(StoredJob());
  ASSERT_TRUE(job.awaits_template);
  EXPECT_TRUE(job.spec_error.empty()) << job.spec_error;
  const CachedTemplate t = Template("pytorch:2.5", 4);
  const TemplateResolution r = ResolveTemplate(&t, true, T0(), &job);
  ASSERT_EQ(r.state, State::kLive);
  EXPECT_TRUE(job.spec_error.empty()) << job.spec_error;
  EXPECT_EQ(job.job.spec.framework, api::Framework::kPyTorch);
  EXPECT_EQ(job.job.spec.replicas, 2);
  const json& trainer = job.job.spec.pod_template["spec"]["containers"][0];
  EXPECT_EQ(trainer["image"], "pytorch:2.5");
  EXPECT_EQ(trainer["command"], json({"train"}));
  ASSERT_TRUE(r.live);
  EXPECT_EQ(r.live->kind, "ClusterTrainingTemplate");
  EXPECT_EQ(r.live->name, "pytorch");
  EXPECT_EQ(r.live->uid, "tmpl-uid");
  EXPECT_EQ(r.live->resource_version, "77");
  EXPECT_EQ(r.live->generation, 4);
  EXPECT_EQ(r.live->spec, t.spec);
}

TEST(TemplateResolveTest, AMissingTemplateHoldsOnlyOnceTheCachesListed) {
  CachedJob job = Decode(StoredJob());
  EXPECT_EQ(ResolveTemplate(nullptr, false, T0(), &job).state, State::kCachesNotSynced);
  EXPECT_EQ(ResolveTemplate(nullptr, true, T0(), &job).state, State::kNotFound);
}

TEST(TemplateResolveTest, AMergeErrorIsTheJobsSpecErrorNamingTheField) {
  json stored = StoredJob();
  stored["spec"]["template"]["spec"]["containers"][0].erase("name");
  CachedJob job = Decode(stored);
  const CachedTemplate t = Template("img");
  ResolveTemplate(&t, true, T0(), &job);
  EXPECT_EQ(job.spec_error,
            "merged with ClusterTrainingTemplate/pytorch: spec.template.spec.containers[0].name: "
            "required in the job to merge the job with its template");
}

// Once the snapshot is in status, the job's spec is the merge over it, whatever the template is
// now: an edit (here a new image) or a deletion changes nothing.
TEST(TemplateResolveTest, AStartedJobRunsOnItsSnapshot) {
  api::ResolvedTemplate snap{"ClusterTrainingTemplate", "pytorch", "tmpl-uid", "77", 4, T0(),
                             Template("pytorch:2.5").spec};
  CachedJob job = Decode(StoredJob({{"resolvedTemplate", api::EncodeResolvedTemplate(snap)}}));
  EXPECT_FALSE(job.awaits_template);
  ASSERT_TRUE(job.spec_error.empty()) << job.spec_error;
  const CachedTemplate edited = Template("pytorch:2.6", 5);
  for (const CachedTemplate* live : {&edited, static_cast<const CachedTemplate*>(nullptr)}) {
    CachedJob pass = job;
    const TemplateResolution r = ResolveTemplate(live, true, T0(), &pass);
    EXPECT_EQ(r.state, State::kSnapshot);
    EXPECT_EQ(pass.job.spec.pod_template["spec"]["containers"][0]["image"], "pytorch:2.5");
  }
  Plan plan;
  plan.status = job.job.status;
  RecordTemplate(ResolveTemplate(&edited, true, T0(), &job), job, T0(), &plan);
  const api::Condition* c =
      api::FindCondition(plan.status.conditions, api::kConditionTemplateReady);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, api::ConditionStatus::kTrue);
  EXPECT_EQ(c->reason, "Snapshotted");
  EXPECT_NE(c->message.find("ClusterTrainingTemplate/pytorch (generation 4)"), std::string::npos);
  EXPECT_NE(c->message.find("edits to the template do not change this job"), std::string::npos);
}

// The pass that creates the first pods records the snapshot (before them: RecordsFirst); a pass
// that creates none (suspended, queued, waiting for the gang) only says it resolved.
TEST(TemplateResolveTest, TheSnapshotIsTakenWithTheFirstPods) {
  const CachedTemplate t = Template("pytorch:2.5", 4);
  CachedJob job = Decode(StoredJob());
  const TemplateResolution r = ResolveTemplate(&t, true, T0(), &job);
  Plan plan = ComputePlan(job, Observed{}, T0(), true, PlanOptions{"launcher:test"});
  ASSERT_FALSE(plan.pod_creates.empty()) << plan.decided_by;
  const json& trainer = plan.pod_creates[0]["spec"]["containers"][0];
  EXPECT_EQ(trainer["image"], "pytorch:2.5");
  bool nccl = false;
  for (const json& e : trainer["env"]) nccl = nccl || e["name"] == "NCCL_DEBUG";
  EXPECT_TRUE(nccl) << trainer["env"].dump();
  RecordTemplate(r, job, T0(), &plan);
  ASSERT_TRUE(plan.status.resolved_template);
  EXPECT_EQ(*plan.status.resolved_template, *r.live);
  ASSERT_EQ(plan.events.size() > 0, true);
  EXPECT_EQ(plan.events.back().reason, "Snapshotted");

  Plan waiting;
  RecordTemplate(r, job, T0(), &waiting);
  EXPECT_FALSE(waiting.status.resolved_template);
  const api::Condition* c =
      api::FindCondition(waiting.status.conditions, api::kConditionTemplateReady);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "Resolved");
}

TEST(TemplateResolveTest, HoldNamesTheTemplateAndWarnsOnTheTransitionOnly) {
  CachedJob job = Decode(StoredJob());
  const TemplateResolution r = ResolveTemplate(nullptr, true, T0(), &job);
  const Plan first = HoldForTemplate(r, job, T0());
  EXPECT_TRUE(first.pod_creates.empty());
  ASSERT_TRUE(first.status.state);
  EXPECT_EQ(*first.status.state, api::JobState::kPending);
  EXPECT_EQ(first.status.reason, "TemplateNotFound");
  EXPECT_EQ(first.status.message,
            "waiting for ClusterTrainingTemplate/pytorch: not found; the job starts when it is "
            "created");
  const api::Condition* c =
      api::FindCondition(first.status.conditions, api::kConditionTemplateReady);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, api::ConditionStatus::kFalse);
  EXPECT_EQ(c->reason, "TemplateNotFound");
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].type, "Warning");

  CachedJob again = job;
  again.job.status = first.status;
  const Plan second = HoldForTemplate(r, again, T0() + std::chrono::seconds(5));
  EXPECT_TRUE(second.events.empty());
  EXPECT_EQ(second.status.conditions, first.status.conditions);  // no transition, no new time

  json namespaced = StoredJob();
  namespaced["spec"]["templateRef"] = {{"kind", "TrainingTemplate"}, {"name", "jax"}};
  CachedJob ns_job = Decode(namespaced);
  const Plan ns_plan = HoldForTemplate(ResolveTemplate(nullptr, true, T0(), &ns_job), ns_job, T0());
  EXPECT_EQ(ns_plan.status.message,
            "waiting for TrainingTemplate/jax in namespace ns: not found; the job starts when it "
            "is created");
}

}  // namespace
}  // namespace lockstep::controller
