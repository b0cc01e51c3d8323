#include <gtest/gtest.h>

#include "launcher/supervisor/output_tail.h"
#include "launcher/supervisor/termination.h"
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

}  // namespace
}  // namespace lockstep::launcher::supervisor
