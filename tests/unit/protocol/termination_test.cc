// The termination message (protocol/termination.h) and the failure reasons it and the messages
// carry (protocol/failure_reason.h).
#include "protocol/termination.h"

#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

namespace lockstep::protocol {
namespace {

// A version-1 message (no progress).
TerminationMessage Sample() {
  return {.version = 1,
          .reason = FailureReason::kExit,
          .attempt = 2,
          .restart_count = 1,
          .requested_restarts = 3,
          .node_rank = 1,
          .rank = 5,
          .exit_code = 3,
          .signal = 0,
          .message = "rank 5 exited with code 3",
          .stderr_tail = {"Traceback (most recent call last):", "ValueError: bad shard"}};
}

// What a launcher of termination version 1 writes for Sample(). A renamed or retyped key fails
// here, and must not happen (protocol/README.md): operators read the messages of older launchers.
constexpr const char* kVersion1 =
    R"({"attempt":2,"exitCode":3,"message":"rank 5 exited with code 3","nodeRank":1,"rank":5,)"
    R"("reason":"exit","requestedRestarts":3,"restartCount":1,"signal":0,"stderrTail":)"
    R"(["Traceback (most recent call last):","ValueError: bad shard"],"version":1})";

TEST(TerminationTest, EncodesVersion1AndDecodesBack) {
  EXPECT_EQ(EncodeTermination(Sample()), kVersion1);
  std::optional<TerminationMessage> back = DecodeTermination(kVersion1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, Sample());
}

TEST(TerminationTest, AMessageWithoutAVersionHasVersion1sKeys) {
  nlohmann::json old = nlohmann::json::parse(kVersion1);
  old.erase("version");
  std::optional<TerminationMessage> back = DecodeTermination(old.dump());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, Sample());
}

// Version 2 adds `progress`: the trainers' last report, read back exactly; absent without one,
// and left out when its step is not a count.
TEST(TerminationTest, Version2CarriesTheTrainersLastProgressReport) {
  TerminationMessage m = Sample();
  m.version = kTerminationVersion;
  m.progress = TrainingProgress{.step = 4000, .total_steps = 4000, .samples_per_second_milli = 812500};
  const nlohmann::json doc = nlohmann::json::parse(EncodeTermination(m));
  EXPECT_EQ(doc["version"], kTerminationVersion);
  EXPECT_EQ(doc["progress"], nlohmann::json::parse(
                                 R"({"step":4000,"totalSteps":4000,"samplesPerSecondMilli":812500})"));
  std::optional<TerminationMessage> back = DecodeTermination(doc.dump());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, m);
  EXPECT_FALSE(nlohmann::json::parse(EncodeTermination(Sample())).contains("progress"));
  for (const char* bad : {R"({"step":-1})", R"({"step":"9"})", R"({"totalSteps":9})", "[1]"}) {
    nlohmann::json d = doc;
    d["progress"] = nlohmann::json::parse(bad);
    std::optional<TerminationMessage> read = DecodeTermination(d.dump());
    ASSERT_TRUE(read.has_value()) << bad;
    EXPECT_FALSE(read->progress.has_value()) << bad;
  }
}

// Version 3 adds `progress.checkpointStep`, when the trainers reported one; a version-2 reader's
// keys are unchanged, and one that is not a count reads as not reported.
TEST(TerminationTest, Version3CarriesTheCheckpointStep) {
  TerminationMessage m = Sample();
  m.version = kTerminationVersion;
  m.progress = TrainingProgress{.step = 4000, .total_steps = 5000, .checkpoint_step = 3500};
  const nlohmann::json doc = nlohmann::json::parse(EncodeTermination(m));
  EXPECT_EQ(doc["version"], 3);
  EXPECT_EQ(doc["progress"]["checkpointStep"], 3500);
  std::optional<TerminationMessage> back = DecodeTermination(doc.dump());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, m);
  nlohmann::json bad = doc;
  bad["progress"]["checkpointStep"] = -5;
  back = DecodeTermination(bad.dump());
  ASSERT_TRUE(back.has_value() && back->progress.has_value());
  EXPECT_EQ(back->progress->step, 4000u);
  EXPECT_FALSE(back->progress->checkpoint_step.has_value());
}

TEST(TerminationTest, NoRequestedRestartsKeyUnlessTheOperatorAsked) {
  TerminationMessage m = Sample();
  m.requested_restarts = 0;
  EXPECT_FALSE(nlohmann::json::parse(EncodeTermination(m)).contains("requestedRestarts"));
}

// A newer launcher's keys and reasons are skipped; what this version knows is still read.
TEST(TerminationTest, ANewerLaunchersMessageIsReadForTheKeysThisVersionKnows) {
  nlohmann::json newer = nlohmann::json::parse(kVersion1);
  newer["version"] = 7;
  newer["reason"] = "a-reason-of-version-7";
  newer["lossReport"] = {{"step", 12}};
  std::optional<TerminationMessage> back = DecodeTermination(newer.dump());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->version, 7);
  EXPECT_EQ(back->reason, FailureReason::kUnknown);
  EXPECT_EQ(back->restart_count, 1);
  EXPECT_EQ(back->stderr_tail, Sample().stderr_tail);
}

TEST(TerminationTest, OnlyALaunchersMessageDecodes) {
  for (const char* text : {"", "CUDA error: device-side assert", "{restartCount: 9", "[1,2]",
                           R"({"restartCount":2})", R"("stderrTail")"}) {
    EXPECT_FALSE(DecodeTermination(text).has_value()) << text;
  }
  EXPECT_TRUE(DecodeTermination(R"({"stderrTail":[]})").has_value());
}

TEST(TerminationTest, MistypedKeysKeepTheirDefaultsAndCountsAreNeverNegative) {
  std::optional<TerminationMessage> m = DecodeTermination(
      R"({"restartCount":"5","requestedRestarts":-4,"rank":"x","message":7,)"
      R"("stderrTail":["kept",3,null]})");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->restart_count, 0);
  EXPECT_EQ(m->requested_restarts, 0);
  EXPECT_EQ(m->rank, -1);
  EXPECT_EQ(m->message, "");
  EXPECT_EQ(m->stderr_tail, std::vector<std::string>{"kept"});
}

// Found by tests/fuzz/termination: integers beyond int's range used to wrap (2^32 + 3 read as 3,
// 2^64 - 1 as -1). They keep their defaults; the bounds themselves still read.
TEST(TerminationTest, IntegersBeyondIntKeepTheirDefaultsInsteadOfWrapping) {
  std::optional<TerminationMessage> m = DecodeTermination(
      R"({"exitCode":4294967299,"rank":-9223372036854775808,"attempt":18446744073709551615,)"
      R"("signal":2147483648,"nodeRank":-2147483649,"stderrTail":[]})");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->exit_code, 0);
  EXPECT_EQ(m->rank, -1);
  EXPECT_EQ(m->attempt, 0);
  EXPECT_EQ(m->signal, 0);
  EXPECT_EQ(m->node_rank, 0);
  m = DecodeTermination(R"({"exitCode":2147483647,"rank":-2147483648,"stderrTail":[]})");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->exit_code, 2147483647);
  EXPECT_EQ(m->rank, -2147483648);
}

// Issue 44 item 6: the restart counts a container may write are added to int32 status counts;
// they saturate to [0, kMaxCounter] instead of overflowing a sum. Progress numbers stay u64
// (training_progress.h saturates them into status.progress).
TEST(TerminationTest, RestartCountsSaturateAndProgressKeepsItsRange) {
  struct Row {
    const char* json;
    int restart_count;
    int requested;
  };
  const Row rows[] = {
      {R"({"restartCount":2147483647,"requestedRestarts":2147483646,"stderrTail":[]})",
       static_cast<int>(kMaxCounter), static_cast<int>(kMaxCounter)},
      {R"({"restartCount":16777216,"requestedRestarts":16777215,"stderrTail":[]})",
       static_cast<int>(kMaxCounter), static_cast<int>(kMaxCounter) - 1},
      {R"({"restartCount":16777217,"requestedRestarts":-2147483648,"stderrTail":[]})",
       static_cast<int>(kMaxCounter), 0},
      {R"({"restartCount":4294967296,"requestedRestarts":-1,"stderrTail":[]})", 0, 0},
  };
  for (const Row& row : rows) {
    std::optional<TerminationMessage> m = DecodeTermination(row.json);
    ASSERT_TRUE(m.has_value()) << row.json;
    EXPECT_EQ(m->restart_count, row.restart_count) << row.json;
    EXPECT_EQ(m->requested_restarts, row.requested) << row.json;
  }
  std::optional<TerminationMessage> m = DecodeTermination(
      R"({"progress":{"step":18446744073709551615,"totalSteps":9223372036854775808,)"
      R"("samplesPerSecondMilli":-5},"stderrTail":[]})");
  ASSERT_TRUE(m.has_value() && m->progress.has_value());
  EXPECT_EQ(m->progress->step, ~uint64_t{0});
  EXPECT_EQ(m->progress->total_steps, uint64_t{1} << 63);
  EXPECT_EQ(m->progress->samples_per_second_milli, 0u);  // negative: not a count, left unset
}

TEST(TerminationTest, StaysUnderKubernetesLimitDroppingOldestLines) {
  TerminationMessage m = Sample();
  m.stderr_tail.clear();
  for (int i = 0; i < 100; ++i) {
    m.stderr_tail.push_back("line " + std::to_string(i) + std::string(100, 'x'));
  }
  m.stderr_tail.push_back("invalid UTF-8: \xff");
  const std::string out = EncodeTermination(m);
  EXPECT_LE(out.size(), kMaxTerminationBytes);
  std::optional<TerminationMessage> back = DecodeTermination(out);
  ASSERT_TRUE(back.has_value());
  ASSERT_GE(back->stderr_tail.size(), 2u);
  EXPECT_EQ(back->stderr_tail[back->stderr_tail.size() - 2].rfind("line 99", 0), 0u);
  EXPECT_NE(back->stderr_tail.back().find("invalid UTF-8"), std::string::npos);
}

TEST(FailureReasonTest, EveryReasonRoundTripsThroughItsOneName) {
  std::set<std::string_view> names;
  for (int i = static_cast<int>(FailureReason::kUnknown);
       i <= static_cast<int>(FailureReason::kSucceeded); ++i) {
    const auto reason = static_cast<FailureReason>(i);
    EXPECT_EQ(ParseFailureReason(ToString(reason)), reason) << ToString(reason);
    EXPECT_TRUE(names.insert(ToString(reason)).second) << ToString(reason);
  }
  EXPECT_EQ(ParseFailureReason("peer-lost"), FailureReason::kPeerLost);
  EXPECT_EQ(ParseFailureReason("no-such-reason"), FailureReason::kUnknown);
}

}  // namespace
}  // namespace lockstep::protocol
