#include <gtest/gtest.h>

#include "launcher/supervisor/output_tail.h"
#include "launcher/supervisor/stop_grace.h"
#include "launcher/supervisor/termination_log.h"
#include "launcher/sys/process.h"

namespace lockstep::launcher::supervisor {
namespace {

TEST(OutputTailTest, KeepsLastLinesAcrossChunks) {
  OutputTail tail(/*max_lines=*/3, /*max_line_bytes=*/100);
  tail.Append("one\ntw");
  tail.Append("o\nthree\nfour\nfi");
  EXPECT_EQ(tail.Lines(), (std::vector<std::string>{"three", "four", "fi"}));
}

TEST(OutputTailTest, TruncatesLongLines) {
  OutputTail tail(/*max_lines=*/2, /*max_line_bytes=*/4);
  tail.Append("abcdefgh\r\nxy");
  tail.Append("z\n");
  EXPECT_EQ(tail.Lines(), (std::vector<std::string>{"abcd", "xyz"}));
}

TEST(TerminationTest, UnwritablePathIsAnErrorValue) {
  EXPECT_FALSE(WriteTerminationLog("/nonexistent-dir/termination-log", {}).ok());
}

TEST(WaitStatusTest, SignalsMapTo128PlusN) {
  sys::ExitInfo killed = sys::DecodeWaitStatus(9);  // WTERMSIG = 9
  EXPECT_EQ(killed.signal, 9);
  EXPECT_EQ(killed.exit_code, 137);
  sys::ExitInfo exited = sys::DecodeWaitStatus(3 << 8);
  EXPECT_EQ(exited.signal, 0);
  EXPECT_EQ(exited.exit_code, 3);
}

// A signal's stop (the pod deleted) gets the whole configured grace, however long; a stop the
// launcher decides itself (a gang failure) at most 10 s.
TEST(StopGraceTest, SignalGetsTheWholeGraceAGangStopTheCap) {
  using std::chrono::milliseconds;
  struct Case {
    StopCause cause;
    int64_t configured_ms;
    int64_t want_ms;
  };
  const Case cases[] = {
      {StopCause::kSignal, 29000, 29000}, {StopCause::kGang, 29000, 10000},
      {StopCause::kSignal, 10000, 10000}, {StopCause::kGang, 10000, 10000},
      {StopCause::kSignal, 4000, 4000},   {StopCause::kGang, 4000, 4000},
      {StopCause::kSignal, 0, 0},         {StopCause::kGang, 0, 0},
      {StopCause::kSignal, -1, 0},        {StopCause::kGang, 3600000, 10000},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(StopGrace(c.cause, milliseconds(c.configured_ms)).count(), c.want_ms)
        << (c.cause == StopCause::kSignal ? "signal " : "gang ") << c.configured_ms;
  }
  EXPECT_EQ(kGangStopGraceCap, milliseconds(10000));
}

TEST(StopGraceTest, ASignalsStopExits128PlusN) {
  EXPECT_EQ(SignalExitCode(15), 143);
  EXPECT_EQ(SignalExitCode(2), 130);
}

}  // namespace
}  // namespace lockstep::launcher::supervisor
