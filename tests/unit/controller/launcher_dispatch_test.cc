// LauncherDispatch (operator/controller/launcher_dispatch.h), the launcher monitor's run queue:
// coalescing, one request in flight per job, round-robin between jobs, and the lanes that keep
// silent jobs and probes from holding the workers healthy jobs need. Each case is a script of
// Add / Next / Done steps with what each must return. The threads that run the requests, against
// real sockets: launcher_monitor_load_test.cc.
#include "operator/controller/launcher_dispatch.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace lockstep::controller {
namespace {

using Kind = LauncherOpKind;

enum class Do { kAdd, kNext, kDone, kForget };

// One step. kAdd: `added` says whether the request is queued (false: coalesced). kNext: `job`
// and `kind` the request taken, job "" for none. kDone: the job's request in flight ends with
// `outcome`. kForget: `dropped` requests dropped.
struct Step {
  Do what;
  std::string job = "";
  Kind kind = Kind::kStatus;
  std::string probe_key = "";
  bool added = true;
  LauncherOutcome outcome = LauncherOutcome::kInTime;
  size_t dropped = 0;
};

Step Add(std::string job, Kind kind = Kind::kStatus, std::string key = "", bool added = true) {
  return Step{Do::kAdd, std::move(job), kind, std::move(key), added};
}
Step Coalesced(std::string job, Kind kind = Kind::kStatus, std::string key = "") {
  return Add(std::move(job), kind, std::move(key), false);
}
Step Next(std::string job, Kind kind = Kind::kStatus) {
  return Step{Do::kNext, std::move(job), kind};
}
Step NoneRunnable() { return Step{Do::kNext}; }
Step Done(std::string job, LauncherOutcome outcome = LauncherOutcome::kInTime) {
  Step s{Do::kDone, std::move(job)};
  s.outcome = outcome;
  return s;
}
Step Forget(std::string job, size_t dropped) {
  Step s{Do::kForget, std::move(job)};
  s.dropped = dropped;
  return s;
}
// A job whose last control request got no answer in time (one timeout more).
std::vector<Step> TimesOut(const std::string& job) {
  return {Add(job), Next(job), Done(job, LauncherOutcome::kSilent)};
}

struct Case {
  std::string name;
  DispatchLimits limits;
  std::vector<std::vector<Step>> steps;  // concatenated
};

const DispatchLimits kSmall{4, 1, 1};  // 4 workers, one silent, one probe: 2 only responsive

std::vector<Case> Cases() {
  return {
      {"a job's Status coalesces while queued, not once taken; restarts never coalesce",
       kSmall,
       {{Add("a"), Coalesced("a"), Add("a", Kind::kRestart), Add("a", Kind::kRestart),
         Add("a", Kind::kProbe, "pod-1|42"), Coalesced("a", Kind::kProbe, "pod-1|42"),
         Add("a", Kind::kProbe, "pod-1|43"), Next("a"), Add("a"), Coalesced("a")}}},
      {"one request in flight per job; its next waits for its answer",
       kSmall,
       {{Add("a"), Add("a", Kind::kRestart), Next("a"), NoneRunnable(), Done("a"),
         Next("a", Kind::kRestart), NoneRunnable()}}},
      {"round-robin: a job re-queues behind the others after each request",
       kSmall,
       {{Add("a"), Add("a", Kind::kRestart), Add("b"), Next("a"), Done("a"), Next("b"),
         Next("a", Kind::kRestart)}}},
      {"silent jobs hold at most their slots; a healthy job queued after them runs first",
       kSmall,
       {TimesOut("s1"),
        TimesOut("s2"),
        {Add("s1"), Add("s2"), Add("h"), Next("s1"), Next("h"), NoneRunnable(),
         Add("h2", Kind::kRestart), Next("h2", Kind::kRestart),
         Done("s1", LauncherOutcome::kSilent), Next("s2")}}},
      {"a healthy job's probe waits behind probes only, never behind a silent job",
       kSmall,
       {TimesOut("s1"),
        TimesOut("s2"),
        {Add("s1"), Add("s2"), Add("h", Kind::kProbe, "p|1"), Add("g", Kind::kProbe, "p|1"),
         Next("s1"), Next("h", Kind::kProbe), NoneRunnable(), Done("h"), Next("g", Kind::kProbe)}}},
      {"the workers are the bound: four in flight, the fifth waits",
       kSmall,
       {{Add("a"), Add("b"), Add("c"), Add("d"), Add("e"), Next("a"), Next("b"), Next("c"),
         Next("d"), NoneRunnable(), Done("b"), Next("e")}}},
      {"in the silent lane, fewest timeouts first: a job that missed one deadline goes ahead",
       kSmall,
       {TimesOut("old"),
        TimesOut("old"),
        TimesOut("old"),
        TimesOut("new"),
        {Add("old"), Add("new"), Next("new"), Done("new", LauncherOutcome::kSilent), Next("old")}}},
      {"a silent job that answers in time is responsive again",
       kSmall,
       {TimesOut("s"),
        TimesOut("x"),
        {Add("x"), Next("x"), Add("s"), NoneRunnable(), Done("x", LauncherOutcome::kSilent),
         Next("s"), Done("s"), Add("x"), Next("x"), Add("s"), Next("s")}}},
      {"a probe's timeout does not make its job silent",
       kSmall,
       {TimesOut("x"),
        {Add("h", Kind::kProbe, "p|1"), Next("h", Kind::kProbe),
         Done("h", LauncherOutcome::kSilent), Add("x"), Next("x"), Add("h"), Next("h")}}},
      {"Forget drops the queued requests and the job's timeouts; the one in flight ends",
       kSmall,
       {TimesOut("f"),
        TimesOut("t"),
        {Add("f"), Add("f", Kind::kRestart), Forget("f", 2), NoneRunnable(), Add("t"), Next("t"),
         Add("f"), Next("f"), Forget("f", 0), Add("f"), Done("f"), Next("f")}}},
      {"slots are clamped: every lane runs even with too few workers",
       DispatchLimits{1, 5, 5},
       {TimesOut("s"),
        {Add("s"), Add("p", Kind::kProbe, "k"), Add("h"), Next("s"), Next("p", Kind::kProbe),
         Next("h"), NoneRunnable()}}},
  };
}

TEST(LauncherDispatchTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    LauncherDispatch d(c.limits);
    std::map<std::string, LauncherDispatch::Ticket> in_flight;
    size_t n = 0;
    for (const std::vector<Step>& part : c.steps) {
      for (const Step& s : part) {
        SCOPED_TRACE("step " + std::to_string(n++) + " (job " + s.job + ")");
        switch (s.what) {
          case Do::kAdd:
            EXPECT_EQ(d.Add(s.job, s.kind, s.probe_key).has_value(), s.added);
            break;
          case Do::kNext: {
            EXPECT_EQ(d.Runnable(), !s.job.empty());
            std::optional<LauncherDispatch::Ticket> t = d.Next();
            if (s.job.empty()) {
              EXPECT_FALSE(t.has_value()) << "took " << t->job;
              break;
            }
            ASSERT_TRUE(t.has_value());
            EXPECT_EQ(t->job, s.job);
            EXPECT_EQ(t->kind, s.kind);
            in_flight[t->job] = *t;
            break;
          }
          case Do::kDone:
            ASSERT_EQ(in_flight.count(s.job), 1u);
            d.Done(in_flight[s.job], s.outcome);
            in_flight.erase(s.job);
            break;
          case Do::kForget:
            EXPECT_EQ(d.Forget(s.job).size(), s.dropped);
            break;
        }
      }
    }
  }
}

// Runnable() says exactly whether Next() would take a request, and in_flight/queued count.
TEST(LauncherDispatchTest, RunnableAgreesWithNextAndTheCountsAdd) {
  LauncherDispatch d(kSmall);
  for (const std::string job : {"s1", "s2"}) {
    d.Add(job, Kind::kStatus);
    std::optional<LauncherDispatch::Ticket> t = d.Next();
    ASSERT_TRUE(t.has_value());
    d.Done(*t, LauncherOutcome::kSilent);
    EXPECT_EQ(d.ControlLane(job), LauncherLane::kSilent);
  }
  EXPECT_EQ(d.ControlLane("never-asked"), LauncherLane::kResponsive);
  d.Add("s1", Kind::kStatus);
  d.Add("s2", Kind::kStatus);
  EXPECT_TRUE(d.Runnable());
  ASSERT_TRUE(d.Next().has_value());
  EXPECT_FALSE(d.Runnable());  // s2 is queued, but the silent lane is full
  EXPECT_FALSE(d.Next().has_value());
  EXPECT_EQ(d.in_flight(), 1u);
  EXPECT_EQ(d.queued(), 1u);
}

}  // namespace
}  // namespace lockstep::controller
