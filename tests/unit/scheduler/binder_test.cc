// Binder (operator/scheduler/cycle/binder.h) over a scripted transport: every pod of a gang is
// bound with its uid as the precondition, and a gang whose bind failed anywhere is undone so no
// partial gang holds capacity. Binding against the real apiserver: tests/integration/scheduler.
#include "operator/scheduler/cycle/binder.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <map>
#include <set>

#include "tests/testing/fake_transport.h"
#include "tests/unit/scheduler/cycle_builders.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;
using testing::PodOf;

// The pod a request is about: ".../pods/<name>/binding" or ".../pods/<name>".
std::string PodNameIn(const std::string& path) {
  const std::string marker = "/pods/";
  std::string rest = path.substr(path.find(marker) + marker.size());
  return rest.substr(0, rest.find_first_of("/?"));
}

class BinderTest : public ::lockstep::testing::FakeKubeTest {
 protected:
  // A gang of `n` pods, pod i to node-i; `answers` by pod name (default: 201 bound).
  // `delete_answer`: what the undo's deletes get.
  // `writes`: the gang's volume writes, answered `patch_answer`.
  BindOutcome BindGang(int n, std::map<std::string, kube::Response> answers = {},
                       kube::Response delete_answer = {200, "{}", ""},
                       std::vector<VolumeWrite> writes = {},
                       kube::Response patch_answer = {200, "{}", ""}) {
    transport_->SetHandler([answers, delete_answer, patch_answer](const kube::Request& r)
                               -> StatusOr<kube::Response> {
      if (r.method == "PATCH") return patch_answer;
      if (r.method == "DELETE") return delete_answer;
      auto it = answers.find(PodNameIn(r.path));
      return it != answers.end() ? it->second : kube::Response{201, "{}", ""};
    });
    auto gang = std::make_shared<GangBind>();
    gang->volume_writes = std::move(writes);
    for (int i = 0; i < n; ++i) {
      PodPtr pod = PodOf("worker", i, 0, 8);
      assumed_.Assume(pod->meta.Key(), pod->meta.uid, "node-" + std::to_string(i), {});
      gang->targets.emplace_back(pod, "node-" + std::to_string(i));
    }
    std::mutex mu;
    std::condition_variable cv;
    std::optional<BindOutcome> outcome;
    binder_.Bind(gang, [&](const GangBind&, const BindOutcome& o) {
      std::lock_guard<std::mutex> lock(mu);
      outcome = o;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return outcome.has_value(); }));
    return outcome.value_or(BindOutcome{InternalError("no outcome"), 0});
  }

  std::set<std::string> Deleted() const {
    std::set<std::string> out;
    for (const kube::Request& r : transport_->RequestsTo("DELETE", "/api/v1/namespaces/ns/pods/")) {
      EXPECT_NE(r.body.find("\"uid\""), std::string::npos) << "a delete without a precondition";
      out.insert(PodNameIn(r.path));
    }
    return out;
  }

  AssumedPods assumed_;
  ThreadPool pool_{4};
  Binder binder_{client_, pool_, assumed_, clock_};
};

TEST_F(BinderTest, EveryPodIsBoundWithItsUidAsThePrecondition) {
  const BindOutcome outcome = BindGang(3);
  EXPECT_TRUE(outcome.error.ok()) << outcome.error;
  EXPECT_EQ(outcome.deleted, 0);
  const std::vector<kube::Request> binds =
      transport_->RequestsTo("POST", "/api/v1/namespaces/ns/pods/");
  ASSERT_EQ(binds.size(), 3u);
  for (const kube::Request& r : binds) {
    const json body = json::parse(r.body);
    EXPECT_EQ(body["kind"], "Binding");
    const std::string pod = PodNameIn(r.path);
    EXPECT_EQ(body["metadata"]["name"], pod);
    EXPECT_EQ(body["metadata"]["uid"], "pod-worker" + pod.substr(11, 1) + "-0");
    EXPECT_EQ(body["target"]["name"], "node-" + pod.substr(11, 1));
  }
  EXPECT_TRUE(Deleted().empty());
  EXPECT_EQ(assumed_.size(), 3u);  // confirmed; dropped once the pod list shows them bound
}

// A failed bind undoes the gang: every pod that is, or may be, bound is deleted. NotFound and
// Conflict left their pod unbound (gone, or bound by someone else), Invalid was refused before
// any write: those are not deleted.
TEST_F(BinderTest, AFailedBindUndoesEveryPodThatMayBeBound) {
  const BindOutcome outcome =
      BindGang(6, {{"job-worker-1-a0", ApiStatus(500, "InternalError", "etcd")},
                   {"job-worker-2-a0", ApiStatus(404, "NotFound")},
                   {"job-worker-3-a0", ApiStatus(409, "Conflict")},
                   {"job-worker-4-a0", ApiStatus(422, "Invalid")}});
  EXPECT_FALSE(outcome.error.ok());
  EXPECT_EQ(Deleted(), (std::set<std::string>{"job-worker-0-a0", "job-worker-1-a0",
                                               "job-worker-5-a0"}));
  EXPECT_EQ(outcome.deleted, 3);
  EXPECT_EQ(assumed_.size(), 0u);  // the capacity is free again
}

TEST_F(BinderTest, AnUndoDeleteThatFailsIsNotCounted) {
  const BindOutcome outcome =
      BindGang(2, {{"job-worker-1-a0", ApiStatus(500, "InternalError", "etcd")}},
               ApiStatus(403, "Forbidden", "no delete"));
  EXPECT_FALSE(outcome.error.ok());
  EXPECT_EQ(Deleted(), (std::set<std::string>{"job-worker-0-a0", "job-worker-1-a0"}));  // tried
  EXPECT_EQ(outcome.deleted, 0);
}

TEST_F(BinderTest, AnEmptyGangIsDoneAtOnce) {
  const BindOutcome outcome = BindGang(0);
  EXPECT_TRUE(outcome.error.ok());
  EXPECT_TRUE(transport_->requests().empty());
}

// Volume writes (volume_binding.h) come first, in order, before any bind; when one fails nothing
// is bound and nothing deleted: the pods stay, unbound, and the gang is placed again.
TEST_F(BinderTest, VolumeWritesPrecedeEveryBind) {
  const std::vector<VolumeWrite> writes = {{"ns", "c-0", "uid-c0", "pv-1", "17", "node-0"},
                                           {"ns", "c-1", "uid-c1", "", "", "node-1"}};
  const BindOutcome outcome = BindGang(2, {}, {200, "{}", ""}, writes);
  EXPECT_TRUE(outcome.error.ok()) << outcome.error;
  const std::vector<kube::Request> all = transport_->requests();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].method, "PATCH");
  EXPECT_EQ(all[0].path, "/api/v1/persistentvolumes/pv-1");
  EXPECT_EQ(json::parse(all[0].body), VolumeWritePatch(writes[0]));
  EXPECT_EQ(all[1].method, "PATCH");
  EXPECT_EQ(all[1].path, "/api/v1/namespaces/ns/persistentvolumeclaims/c-1");
  EXPECT_EQ(all[2].method, "POST");
  EXPECT_EQ(all[3].method, "POST");
}

TEST_F(BinderTest, AFailedVolumeWriteBindsAndDeletesNothing) {
  const std::vector<VolumeWrite> writes = {{"ns", "c-0", "uid-c0", "pv-1", "17", "node-0"}};
  const BindOutcome outcome =
      BindGang(2, {}, {200, "{}", ""}, writes,
               {409, R"({"kind":"Status","reason":"Conflict","code":409})", ""});
  EXPECT_FALSE(outcome.error.ok());
  EXPECT_NE(outcome.error.message().find("pre-bound PV pv-1 to claim ns/c-0"), std::string::npos)
      << outcome.error;
  EXPECT_EQ(outcome.deleted, 0);
  EXPECT_TRUE(transport_->RequestsTo("POST", "/api/v1/namespaces/ns/pods/").empty());
  EXPECT_TRUE(Deleted().empty());
  EXPECT_EQ(assumed_.size(), 0u);  // forgotten: the pods are placed again
}

}  // namespace
}  // namespace lockstep::scheduler
