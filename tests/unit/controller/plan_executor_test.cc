// PlanExecutor (operator/controller/plan_executor.h), the reconciler's "act", over a scripted
// transport: which writes a plan makes, the slow-start batches that stop at the first error, the
// expectations around every write, and what counts as already done. What the apiserver does with
// those writes (AlreadyExists after a crash, uid preconditions, garbage collection) is covered
// against the real one in tests/integration/controller.
#include "operator/controller/plan_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <set>

#include "tests/testing/fake_transport.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using ::lockstep::testing::FakeTransport;
using nlohmann::json;
using testing::Job;

constexpr char kPods[] = "/api/v1/namespaces/ns/pods";

json PodJson(int index) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "job-worker-" + std::to_string(index)}, {"namespace", "ns"}}}};
}

Plan CreatePlan(int pods) {
  Plan plan;
  for (int i = 0; i < pods; ++i) plan.pod_creates.push_back(PodJson(i));
  return plan;
}

class PlanExecutorTest : public ::lockstep::testing::FakeKubeTest {
 protected:
  // Pods whose create gets `answer`; every other write succeeds.
  void Refuse(std::set<std::string> pods, kube::Response answer) {
    transport_->SetHandler([pods, answer](const kube::Request& r) -> StatusOr<kube::Response> {
      if (r.method == "POST" && r.path == kPods &&
          pods.count(json::parse(r.body)["metadata"]["name"]) > 0) {
        return answer;
      }
      return kube::Response{201, "{}", ""};
    });
  }
  std::vector<std::string> Created() const {
    std::vector<std::string> out;
    for (const json& pod : transport_->BodiesTo("POST", kPods)) {
      out.push_back(pod["metadata"]["name"]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Expectations expectations_{clock_};
  kube::EventRecorder events_{client_, kube::EventRecorderOptions{}, clock_};
  PlanExecutor executor_{client_, expectations_, events_};
  const CachedJob job_ = Job(2);
};

TEST_F(PlanExecutorTest, CreatesTheSharedChildrenAndKeepsOnesThatExist) {
  transport_->SetHandler([](const kube::Request& r) -> StatusOr<kube::Response> {
    if (r.method == "POST" && r.path == "/api/v1/namespaces/ns/services") {
      return ApiStatus(409, "AlreadyExists", "services \"job\" already exists");
    }
    return kube::Response{201, "{}", ""};
  });
  Plan plan;
  plan.create_service = true;
  plan.create_secret = true;
  ASSERT_TRUE(executor_.Act(job_, plan).ok());
  ASSERT_EQ(transport_->RequestsTo("POST", "/api/v1/namespaces/ns/services").size(), 1u);
  const std::vector<kube::Request> secrets =
      transport_->RequestsTo("POST", "/api/v1/namespaces/ns/secrets");
  ASSERT_EQ(secrets.size(), 1u);
  const json secret = json::parse(secrets[0].body);
  EXPECT_EQ(secret["metadata"]["name"], "job-rdzv");
  EXPECT_FALSE(secret["data"]["token"].get<std::string>().empty());
}

// Issue 44 item 7: no informer holds Secrets (the operator may only get and create them), so the
// executor makes sure of the job's Secret from the API server in the passes that need it: the
// first (create_secret) and every pass that creates pods. A steady-state pass sends no Secret
// request at all; a Secret that exists is read back and used only if the job controls it.
TEST_F(PlanExecutorTest, TheSecretIsMadeSureOfOnlyInPassesThatCreatePods) {
  constexpr char kSecrets[] = "/api/v1/namespaces/ns/secrets";
  constexpr char kSecret[] = "/api/v1/namespaces/ns/secrets/job-rdzv";
  const json owned = {{"metadata",
                       {{"name", "job-rdzv"},
                        {"ownerReferences",
                         json::array({{{"apiVersion", "lockstep.dev/v1alpha1"},
                                       {"kind", "TrainingJob"},
                                       {"name", "job"},
                                       {"uid", "uid-1"},
                                       {"controller", true}}})}}}};
  const json foreign = {{"metadata", {{"name", "job-rdzv"}}}};
  struct Row {
    const char* name;
    bool create_secret;
    int pods;
    std::optional<json> existing;  // the Secret the API server holds already
    size_t posts, gets, created;
    bool ok;
    std::vector<std::string> events;
  };
  const Row rows[] = {
      {"steady state: nothing to create, no Secret request", false, 0, owned, 0, 0, 0, true, {}},
      {"pods to create, no Secret yet: it is created first", false, 2, std::nullopt, 1, 0, 2,
       true, {}},
      {"pods to create, the job's Secret exists: read back, pods made", false, 2, owned, 1, 1, 2,
       true, {}},
      {"pods to create, a foreign Secret: refused, no pod", false, 2, foreign, 1, 1, 0, false,
       {"SecretNotOwned"}},
      {"the first pass without pods still makes it", true, 0, std::nullopt, 1, 0, 0, true, {}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    transport_ = std::make_shared<FakeTransport>();
    kube::RestClient client(transport_, ::lockstep::testing::OneTryUnlimited());
    Expectations expectations(clock_);
    kube::EventRecorder events(client, kube::EventRecorderOptions{}, clock_);
    PlanExecutor executor(client, expectations, events);
    const std::optional<json> existing = r.existing;
    transport_->SetHandler([&](const kube::Request& q) -> StatusOr<kube::Response> {
      if (q.method == "POST" && q.path == kSecrets && existing) {
        return ApiStatus(409, "AlreadyExists", "secrets \"job-rdzv\" already exists");
      }
      if (q.method == "GET" && q.path == kSecret) {
        if (!existing) return ApiStatus(404, "NotFound", "secrets \"job-rdzv\" not found");
        return kube::Response{200, existing->dump(), ""};
      }
      return kube::Response{201, "{}", ""};
    });
    Plan plan = CreatePlan(r.pods);
    plan.create_secret = r.create_secret;
    const Status s = executor.Act(job_, plan);
    EXPECT_EQ(s.ok(), r.ok) << s;
    EXPECT_EQ(transport_->RequestsTo("POST", kSecrets).size(), r.posts);
    EXPECT_EQ(transport_->RequestsTo("GET", kSecret).size(), r.gets);
    EXPECT_EQ(Created().size(), r.created);
    EXPECT_EQ(EventReasons(events), r.events);
  }
}

// The Service, the Secret and the NetworkPolicy are created at once: the handler answers none of
// them until all three are in flight (sequential creates would wait 5 s, then fail the pass).
// Pods come only after all three were answered.
TEST_F(PlanExecutorTest, SharedChildrenAreCreatedAtOnceAndBeforeAnyPod) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  bool pod_before_shared = false;
  transport_->SetHandler([&](const kube::Request& r) -> StatusOr<kube::Response> {
    if (r.method != "POST") return kube::Response{200, "{}", ""};
    std::unique_lock<std::mutex> lock(mu);
    if (r.path == kPods) {
      pod_before_shared = pod_before_shared || in_flight < 3;
      return kube::Response{201, "{}", ""};
    }
    ++in_flight;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return in_flight >= 3; })) {
      return ApiStatus(500, "InternalError", "the shared children were created one by one");
    }
    return kube::Response{201, "{}", ""};
  });
  Plan plan = CreatePlan(2);
  plan.create_service = true;
  plan.create_secret = true;
  plan.create_network_policy = true;
  const Status s = executor_.Act(job_, plan);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(Created().size(), 2u);
  EXPECT_FALSE(pod_before_shared);
}

// Slow start: batches of kFirstCreateBatch (8), 16, 32, ... The batch with a failure finishes;
// no later batch starts.
TEST_F(PlanExecutorTest, PodCreatesStopAfterTheBatchThatFailed) {
  static_assert(kFirstCreateBatch == 8, "the rows below count batches of 8, 16, 32");
  struct Row {
    const char* name;
    int pods;
    std::set<std::string> refused;
    size_t attempted;
  };
  const Row rows[] = {
      {"a gang of 8 in one batch", 8, {}, 8},
      {"all fit in batches 8, 16, 32", 40, {}, 40},
      {"a failure in the first batch: its batch finishes, nothing after", 40, {"job-worker-0"}, 8},
      {"a failure in the second batch ends the pass after it", 40, {"job-worker-10"}, 24},
      {"a failure in the third batch", 40, {"job-worker-30"}, 40},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    transport_ = std::make_shared<FakeTransport>();
    kube::RestClient client(transport_, ::lockstep::testing::OneTryUnlimited());
    Expectations expectations(clock_);
    PlanExecutor executor(client, expectations, events_);
    Refuse(r.refused, ApiStatus(500, "InternalError", "etcd"));
    const Status s = executor.Act(job_, CreatePlan(r.pods));
    EXPECT_EQ(s.ok(), r.refused.empty()) << s;
    EXPECT_EQ(Created().size(), r.attempted);
    // A refused create will never be observed; the others are awaited.
    EXPECT_EQ(expectations.Satisfied("ns/job"), r.attempted == r.refused.size());
    for (const std::string& name : Created()) {
      if (r.refused.count(name) == 0) expectations.CreationObserved("ns/job", name);
    }
    EXPECT_TRUE(expectations.Satisfied("ns/job"));
  }
}

TEST_F(PlanExecutorTest, AFailedCreateIsAnEventUnlessThePodExists) {
  Refuse({"job-worker-0"}, ApiStatus(403, "Forbidden", "exceeded quota"));
  EXPECT_FALSE(executor_.Act(job_, CreatePlan(1)).ok());
  EXPECT_EQ(EventReasons(events_), std::vector<std::string>{"FailedCreate"});
  Refuse({"job-worker-0"}, ApiStatus(409, "AlreadyExists"));
  EXPECT_TRUE(IsAlreadyExists(executor_.Act(job_, CreatePlan(1))));
  EXPECT_EQ(EventReasons(events_), std::vector<std::string>{"FailedCreate"});  // no second event
}

TEST_F(PlanExecutorTest, AtMostTheCapIsCreatedInOnePass) {
  ASSERT_TRUE(executor_.Act(job_, CreatePlan(kMaxCreatesPerPass + 20)).ok());
  EXPECT_EQ(Created().size(), static_cast<size_t>(kMaxCreatesPerPass));
}

// Deletes carry the pod's uid and its grace period and go out together (a gang's launchers get
// their SIGTERMs at about the same time); a pod already gone (NotFound) or replaced (Conflict on
// the uid) is done; any other error is returned, naming the pod.
TEST_F(PlanExecutorTest, DeletesArePreconditionedSentTogetherAndReportARealError) {
  Plan plan;
  plan.pod_deletes = {{"job-worker-0", "uid-0", 0},
                      {"job-worker-1", "uid-1", std::nullopt},
                      {"job-worker-2", "uid-2", std::nullopt},
                      {"job-worker-3", "uid-3", std::nullopt},
                      {"job-worker-4", "uid-4", std::nullopt}};
  transport_->SetHandler([](const kube::Request& r) -> StatusOr<kube::Response> {
    if (r.path == std::string(kPods) + "/job-worker-1") return ApiStatus(404, "NotFound");
    if (r.path == std::string(kPods) + "/job-worker-2") {
      return ApiStatus(409, "Conflict", "the uid precondition failed");
    }
    if (r.path == std::string(kPods) + "/job-worker-3") {
      return ApiStatus(500, "InternalError", "etcd");
    }
    return kube::Response{200, "{}", ""};
  });
  const Status s = executor_.Act(job_, plan);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("delete pod job-worker-3"), std::string::npos) << s;
  std::map<std::string, json> bodies;
  for (const kube::Request& r : transport_->RequestsTo("DELETE", kPods)) {
    bodies[r.path.substr(r.path.rfind('/') + 1)] = json::parse(r.body);
  }
  ASSERT_EQ(bodies.size(), 5u);  // one batch: all sent
  EXPECT_EQ(bodies["job-worker-0"]["preconditions"]["uid"], "uid-0");
  EXPECT_EQ(bodies["job-worker-0"]["gracePeriodSeconds"], 0);  // a pod on a lost node
  EXPECT_FALSE(bodies["job-worker-1"].contains("gracePeriodSeconds"));
  // Awaited: only the deletes that succeeded; the failed ones will never be observed.
  EXPECT_FALSE(expectations_.Satisfied("ns/job"));
  expectations_.DeletionObserved("ns/job", "uid-0");
  EXPECT_FALSE(expectations_.Satisfied("ns/job"));
  expectations_.DeletionObserved("ns/job", "uid-4");
  EXPECT_TRUE(expectations_.Satisfied("ns/job"));
}

// More deletes than one batch: a real error in a batch leaves the later batches for the next pass.
TEST_F(PlanExecutorTest, ARealDeleteErrorStopsTheLaterBatches) {
  Plan plan;
  for (size_t i = 0; i < kDeleteBatch + 8; ++i) {
    plan.pod_deletes.push_back({"job-worker-" + std::to_string(i), "uid-" + std::to_string(i),
                                std::nullopt});
  }
  transport_->SetHandler([](const kube::Request& r) -> StatusOr<kube::Response> {
    if (r.path == std::string(kPods) + "/job-worker-1") {
      return ApiStatus(500, "InternalError", "etcd");
    }
    return kube::Response{200, "{}", ""};
  });
  EXPECT_FALSE(executor_.Act(job_, plan).ok());
  EXPECT_EQ(transport_->RequestsTo("DELETE", kPods).size(), kDeleteBatch);
}

TEST_F(PlanExecutorTest, AnExpiredTtlDeletesTheJobAndNothingElse) {
  Plan plan = CreatePlan(2);
  plan.delete_job = true;
  transport_->Push(ApiStatus(404, "NotFound"));  // already gone counts as done
  ASSERT_TRUE(executor_.Act(job_, plan).ok());
  const std::vector<kube::Request> requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "DELETE");
  EXPECT_EQ(requests[0].path, "/apis/lockstep.dev/v1alpha1/namespaces/ns/trainingjobs/job");
  EXPECT_EQ(json::parse(requests[0].body)["preconditions"]["uid"], "uid-1");
}

}  // namespace
}  // namespace lockstep::controller

namespace lockstep::controller {
namespace {

// A GangPlacer that grants every pod a node and records what the executor told it: the
// executor's side of the contract (create_placed.h), with the real scheduler's side tested in
// tests/integration/create_placed.
class RecordingPlacer : public GangPlacer {
 public:
  StatusOr<Grant> PlaceForCreate(const std::vector<nlohmann::json>& pods) override {
    if (refuse) return FailedPreconditionError("does_not_fit");
    Grant grant{"ns/job/0", {}};
    for (const nlohmann::json& pod : pods) {
      const std::string name = pod["metadata"]["name"];
      grant.node_of[name] = "node-" + name;
    }
    return grant;
  }
  Status FinishCreate(const std::string&, const std::vector<nlohmann::json>& created,
                      bool w) override {
    finished = true;
    whole = w;
    created_count = created.size();
    return Status::Ok();
  }
  bool refuse = false;
  bool finished = false;
  bool whole = false;
  size_t created_count = 0;
};

class PlacedPlanExecutorTest : public PlanExecutorTest {
 protected:
  void SetUp() override { executor_.SetGangPlacer(&placer_); }
  // Pod creates answered with the pod and a uid; `refused` pods get a 422.
  void Answer(std::set<std::string> refused) {
    transport_->SetHandler([refused](const kube::Request& r) -> StatusOr<kube::Response> {
      if (r.method == "POST" && r.path == kPods) {
        json pod = json::parse(r.body);
        if (refused.count(pod["metadata"]["name"]) > 0) {
          return ApiStatus(422, "Invalid", "refused by a policy");
        }
        pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"].get<std::string>();
        return kube::Response{201, pod.dump(), ""};
      }
      return kube::Response{200, "{}", ""};
    });
  }
  RecordingPlacer placer_;
};

TEST_F(PlacedPlanExecutorTest, EveryPodIsCreatedWithItsNode) {
  Answer({});
  ASSERT_TRUE(executor_.Act(job_, CreatePlan(3), CreatePath::kPlaced).ok());
  const std::vector<json> bodies = transport_->BodiesTo("POST", kPods);
  ASSERT_EQ(bodies.size(), 3u);
  for (const json& pod : bodies) {
    EXPECT_EQ(pod["spec"]["nodeName"], "node-" + pod["metadata"]["name"].get<std::string>());
  }
  EXPECT_TRUE(placer_.finished);
  EXPECT_TRUE(placer_.whole);
  EXPECT_EQ(placer_.created_count, 3u);
  EXPECT_TRUE(transport_->RequestsTo("DELETE", kPods + std::string("/job-worker-0")).empty());
}

// All or nothing: one refused create, and every pod that was created is deleted by uid.
TEST_F(PlacedPlanExecutorTest, ACreateThatFailsUndoesTheGang) {
  Answer({"job-worker-2"});
  const Status s = executor_.Act(job_, CreatePlan(3), CreatePath::kPlaced);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(placer_.finished);
  EXPECT_FALSE(placer_.whole);
  EXPECT_EQ(placer_.created_count, 2u);
  for (const char* name : {"job-worker-0", "job-worker-1"}) {
    const std::vector<kube::Request> deletes =
        transport_->RequestsTo("DELETE", kPods + std::string("/") + name);
    ASSERT_EQ(deletes.size(), 1u) << name;
    EXPECT_EQ(json::parse(deletes[0].body)["preconditions"]["uid"], std::string("uid-") + name);
  }
  EXPECT_TRUE(transport_->RequestsTo("DELETE", kPods + std::string("/job-worker-2")).empty());
}

// The placer says no, or the pass's path is unplaced: the pods are created without a node.
TEST_F(PlacedPlanExecutorTest, WithoutAGrantPodsAreCreatedUnplaced) {
  Answer({});
  placer_.refuse = true;
  ASSERT_TRUE(executor_.Act(job_, CreatePlan(2), CreatePath::kPlaced).ok());
  placer_.refuse = false;
  ASSERT_TRUE(executor_.Act(job_, CreatePlan(2), CreatePath::kUnplaced).ok());
  // contains(pointer), not pod["spec"]: this job's template is bare, so an unplaced pod has no
  // spec at all, and operator[] of a missing key on a const json reads past its map (ASan saw
  // it in 3 runs of 4).
  for (const json& pod : transport_->BodiesTo("POST", kPods)) {
    EXPECT_FALSE(pod.contains(json::json_pointer("/spec/nodeName"))) << pod.dump();
  }
  EXPECT_FALSE(placer_.finished);
}

}  // namespace
}  // namespace lockstep::controller
