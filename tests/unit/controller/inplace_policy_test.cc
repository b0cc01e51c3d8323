// In-place restart accounting (operator/controller/inplace_policy.h): the one budget, what the
// launchers get, and how the counts the launchers report are charged once.
#include "operator/controller/inplace_policy.h"

#include <gtest/gtest.h>

#include <limits>

#include "protocol/messages.h"

namespace lockstep::controller {
namespace {

api::TrainingJob Job(int32_t max_restarts, int32_t failures,
                     api::RestartMode mode = api::RestartMode::kInPlace) {
  api::TrainingJob job;
  job.spec.failure_policy.max_restarts = max_restarts;
  job.spec.failure_policy.restart_mode = mode;
  job.status.restarts.failures = failures;
  return job;
}

TEST(InPlacePolicyTest, TheBudgetIsWhatIsLeftOfMaxRestarts) {
  struct Row {
    const char* name;
    int32_t max_restarts, failures, unrecorded, left;
  };
  const Row rows[] = {
      {"nothing used", 5, 0, 0, 5},
      {"failures so far", 5, 2, 0, 3},
      {"unrecorded in-place restarts count too", 5, 2, 2, 1},
      {"used up exactly", 5, 3, 2, 0},
      {"past the budget (an ignored rule's restarts) is never negative", 5, 7, 0, 0},
      {"a negative unrecorded count charges nothing", 5, 1, -3, 4},
      {"maxRestarts 0", 0, 0, 0, 0},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(FailureRestartsLeft(Job(r.max_restarts, r.failures), r.unrecorded), r.left)
        << r.name;
  }
}

TEST(InPlacePolicyTest, LaunchersGetTheBudgetOnlyInPlace) {
  EXPECT_EQ(LauncherRestartBudget(Job(5, 2)), 3);
  EXPECT_EQ(LauncherRestartBudget(Job(5, 2, api::RestartMode::kRecreate)), 0);
  api::TrainingJob disrupted = Job(5, 2);
  disrupted.status.restarts.disruptions = 4;  // disruptions never consume maxRestarts
  EXPECT_EQ(LauncherRestartBudget(disrupted), 3);
}

TEST(InPlacePolicyTest, RecordedFailuresBelongToTheCurrentAttempt) {
  api::TrainingJobStatus status;
  status.attempt = 2;
  EXPECT_EQ(RecordedInPlaceFailures(status), 0);
  status.rendezvous = api::RendezvousStatus{2, 4, 3, 1};
  EXPECT_EQ(RecordedInPlaceFailures(status), 3);
  EXPECT_EQ(UnrecordedInPlaceFailures(status, 5), 2);
  EXPECT_EQ(UnrecordedInPlaceFailures(status, 2), 0);  // never negative
  status.rendezvous->attempt = 1;                       // an older attempt's server counted them
  EXPECT_EQ(RecordedInPlaceFailures(status), 0);
  EXPECT_EQ(UnrecordedInPlaceFailures(status, 5), 5);
}

TEST(InPlacePolicyTest, LauncherTotalsAreRecordedOnce) {
  api::TrainingJobStatus status;
  status.attempt = 1;
  InPlaceRecord first = RecordLauncherTotals(status, 2, 1, 3);
  EXPECT_EQ(first.new_failures, 2);
  EXPECT_EQ(first.new_requested, 1);
  EXPECT_EQ(first.rendezvous.attempt, 1);
  EXPECT_EQ(first.rendezvous.round, 3);
  EXPECT_EQ(first.rendezvous.failure_restarts, 2);
  EXPECT_EQ(first.rendezvous.requested_restarts, 1);

  status.rendezvous = first.rendezvous;
  InPlaceRecord again = RecordLauncherTotals(status, 2, 1, std::nullopt);
  EXPECT_EQ(again.new_failures, 0);
  EXPECT_EQ(again.new_requested, 0);
  EXPECT_EQ(again.rendezvous.round, 3);  // an unknown round keeps the recorded one

  // A pod's termination message may trail the server's answer: lower totals record nothing.
  InPlaceRecord lower = RecordLauncherTotals(status, 1, 0, std::nullopt);
  EXPECT_EQ(lower.new_failures, 0);
  EXPECT_EQ(lower.rendezvous.failure_restarts, 2);

  // A new attempt's server starts from zero.
  status.attempt = 2;
  InPlaceRecord next = RecordLauncherTotals(status, 1, 0, 0);
  EXPECT_EQ(next.new_failures, 1);
  EXPECT_EQ(next.rendezvous.attempt, 2);
}

TEST(InPlacePolicyTest, CountsChargeFailuresAndInPlaceRestarts) {
  api::RestartCounts counts;
  CountInPlaceRestarts(counts, 2, 1);
  EXPECT_EQ(counts.failures, 2);
  EXPECT_EQ(counts.in_place, 3);
  CountFailureRestart(counts, 1, /*counts_failure=*/true);  // the failure + 1 unrecorded
  EXPECT_EQ(counts.failures, 4);
  EXPECT_EQ(counts.in_place, 4);
  CountFailureRestart(counts, 2, /*counts_failure=*/false);  // RestartJobAndIgnoreMaxRestarts
  EXPECT_EQ(counts.failures, 4);
  EXPECT_EQ(counts.in_place, 6);
}

constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
constexpr int32_t kWire = static_cast<int32_t>(protocol::kMaxCounter);  // 2^24 per report

TEST(InPlacePolicyTest, AddToCountSaturatesTable) {
  struct Case {
    int32_t count;
    int64_t add;
    int32_t want;
  };
  const Case cases[] = {
      {0, 0, 0},
      {3, 2, 5},
      {kMax - 1, 1, kMax},
      {kMax, 1, kMax},
      {kMax, kWire, kMax},
      {kMax - kWire, 2 * int64_t{kWire}, kMax},
      {kMax, std::numeric_limits<int64_t>::max(), kMax},
      {0, std::numeric_limits<int64_t>::min(), 0},
      {5, -7, 0},
      {kMax, -1, kMax - 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(AddToCount(c.count, c.add), c.want) << c.count << " + " << c.add;
  }
}

// A status already at INT32_MAX (the CRD's maximum), then launchers reporting the wire's maximum
// attempt after attempt: the counts stay at INT32_MAX instead of wrapping negative (which the CRD
// would refuse at write, stalling the job's status for good).
TEST(InPlacePolicyTest, CountsSaturateAtInt32Max) {
  api::RestartCounts counts;
  counts.failures = kMax - 5;
  counts.in_place = kMax - kWire;
  for (int attempt = 0; attempt < 200; ++attempt) {
    CountInPlaceRestarts(counts, kWire, kWire);
    ASSERT_EQ(counts.failures, kMax) << "attempt " << attempt;
    ASSERT_EQ(counts.in_place, kMax) << "attempt " << attempt;
  }
  counts.failures = kMax - 1;
  counts.in_place = kMax;
  CountFailureRestart(counts, kWire, /*counts_failure=*/true);
  EXPECT_EQ(counts.failures, kMax);
  EXPECT_EQ(counts.in_place, kMax);
  counts.failures = kMax;
  CountFailureRestart(counts, kMax, /*counts_failure=*/true);  // 1 + INT32_MAX in int64
  EXPECT_EQ(counts.failures, kMax);
  // The budget left never goes negative either.
  api::TrainingJob job = Job(kMax, kMax);
  EXPECT_EQ(FailureRestartsLeft(job, kWire), 0);
}

}  // namespace
}  // namespace lockstep::controller
