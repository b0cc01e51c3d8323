#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

TEST(TerminationTest, JsonCarriesTheCause) {
  TerminationReport r;
  r.reason = "exit";
  r.attempt = 2;
  r.rank = 5;
  r.exit_code = 3;
  r.stderr_tail = {"Traceback", "ValueError: \xff bad utf8"};
  nlohmann::json j = nlohmann::json::parse(TerminationJson(r));
  EXPECT_EQ(j["reason"], "exit");
  EXPECT_EQ(j["rank"], 5);
  EXPECT_EQ(j["exitCode"], 3);
  EXPECT_EQ(j["attempt"], 2);
  EXPECT_EQ(j["stderrTail"].size(), 2u);
}

TEST(TerminationTest, StaysUnderKubernetesLimitDroppingOldestLines) {
  TerminationReport r;
  r.reason = "hang";
  for (int i = 0; i < 100; ++i) r.stderr_tail.push_back("line " + std::to_string(i) +
                                                        std::string(100, 'x'));
  const std::string out = TerminationJson(r);
  EXPECT_LE(out.size(), kMaxTerminationBytes);
  nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_FALSE(j["stderrTail"].empty());
  EXPECT_EQ(j["stderrTail"].back().get<std::string>().rfind("line 99", 0), 0u);
}

TEST(TerminationTest, UnwritablePathIsAnErrorValue) {
  TerminationReport r;
  EXPECT_FALSE(WriteTerminationLog("/nonexistent-dir/termination-log", r).ok());
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
