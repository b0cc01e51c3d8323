// The trainers' progress file (launcher/progress/): parsing one line, scanning a chunk for its
// complete lines, the bounded reader over a real file, and the stall watch (a hang signal).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "launcher/progress/progress_file.h"
#include "launcher/progress/progress_line.h"
#include "launcher/progress/progress_stall.h"

namespace lockstep::launcher::progress {
namespace {

using protocol::TrainingProgress;

TEST(ParseProgressLineTest, Table) {
  struct Case {
    std::string line;
    std::optional<TrainingProgress> want;
  };
  const std::vector<Case> cases = {
      {R"({"step": 12, "totalSteps": 100, "samplesPerSecond": 812.5})",
       TrainingProgress{12, 100, 812500, 0}},
      {R"({"step": 0})", TrainingProgress{0, 0, 0, 0}},
      {R"({"step": 3, "totalSteps": null, "samplesPerSecond": null})",
       TrainingProgress{3, 0, 0, 0}},
      {"{\"step\": 3}\r", TrainingProgress{3, 0, 0, 0}},
      // Keys of the trainer's own are ignored.
      {R"({"loss": 0.5, "step": 7, "epoch": 1})", TrainingProgress{7, 0, 0, 0}},
      {R"({"step": 18446744073709551615})", TrainingProgress{UINT64_MAX, 0, 0, 0}},
      // Rates are fixed point, rounded, and capped.
      {R"({"step": 1, "samplesPerSecond": 0.0004})", TrainingProgress{1, 0, 0, 0}},
      {R"({"step": 1, "samplesPerSecond": 1e300})",
       TrainingProgress{1, 0, static_cast<uint64_t>(kMaxSamplesPerSecond * 1000), 0}},
      // The step the newest checkpoint holds (status.goodput's recomputed steps).
      {R"({"step": 1200, "checkpointStep": 1000})", TrainingProgress{1200, 0, 0, 0, 1000}},
      {R"({"step": 5, "checkpointStep": 0})", TrainingProgress{5, 0, 0, 0, 0}},
      {R"({"step": 5, "checkpointStep": null})", TrainingProgress{5, 0, 0, 0}},
      {R"({"step": 5, "checkpointStep": 18446744073709551615})",
       TrainingProgress{5, 0, 0, 0, UINT64_MAX}},
      // Malformed.
      {"", std::nullopt},
      {R"({"step": 5, "checkpointStep": -1})", std::nullopt},
      {R"({"step": 5, "checkpointStep": 4.5})", std::nullopt},
      {R"({"step": 5, "checkpointStep": "4"})", std::nullopt},
      {R"({"step": 5, "checkpointStep": 18446744073709551616})", std::nullopt},
      {"step 12", std::nullopt},
      {R"({"step": 12)", std::nullopt},
      {R"([{"step": 12}])", std::nullopt},
      {R"({"totalSteps": 10})", std::nullopt},
      {R"({"step": -1})", std::nullopt},
      {R"({"step": 1.5})", std::nullopt},
      {R"({"step": 2.0})", std::nullopt},
      {R"({"step": "12"})", std::nullopt},
      {R"({"step": 1, "totalSteps": -5})", std::nullopt},
      {R"({"step": 1, "totalSteps": "all"})", std::nullopt},
      {R"({"step": 1, "samplesPerSecond": -2})", std::nullopt},
      {R"({"step": 1, "samplesPerSecond": "fast"})", std::nullopt},
      {R"({"step": 1} {"step": 2})", std::nullopt},
      {R"({"step": 1, "pad": ")" + std::string(kMaxProgressLineBytes, 'x') + "\"}", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line.substr(0, 80));
    EXPECT_EQ(ParseProgressLine(c.line), c.want);
  }
}

TEST(ScanProgressChunkTest, Table) {
  struct Case {
    std::string name;
    std::string chunk;
    bool mid_line;
    std::optional<uint64_t> step;  // of the latest report
    uint32_t malformed;
    size_t consumed;
  };
  const std::string a = "{\"step\": 1}\n", b = "{\"step\": 2}\n";
  const std::vector<Case> cases = {
      {"empty", "", false, std::nullopt, 0, 0},
      {"the last complete line wins", a + b, false, 2, 0, a.size() + b.size()},
      {"a line being written is left for later", a + "{\"step\": 3", false, 1, 0, a.size()},
      {"malformed lines are counted, not fatal", a + "oops\n" + "{}\n", false, 1, 2, a.size() + 8},
      {"a malformed last line keeps the report before it", b + "garbage\n", false, 2, 1,
       b.size() + 8},
      {"empty lines are skipped", "\n\r\n" + a + "\n", false, 1, 0, 4 + a.size()},
      {"mid-line: the first fragment is skipped uncounted", "p\": 9}\n" + b, true, 2, 0,
       7 + b.size()},
      {"mid-line with no newline: nothing yet", "p\": 9}", true, std::nullopt, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ChunkScan scan = ScanProgressChunk(c.chunk, c.mid_line);
    ASSERT_EQ(scan.latest.has_value(), c.step.has_value());
    if (c.step) {
      EXPECT_EQ(scan.latest->step, *c.step);
    }
    EXPECT_EQ(scan.malformed, c.malformed);
    EXPECT_EQ(scan.consumed, c.consumed);
  }
}

class ProgressFileReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::string> p = MakeProgressFilePath();
    ASSERT_TRUE(p.ok()) << p.status();
    path_ = *p;
  }
  void TearDown() override {
    RemoveProgressFile(path_);
    EXPECT_NE(::access(path_.substr(0, path_.rfind('/')).c_str(), F_OK), 0) << "dir left behind";
  }
  void Append(const std::string& s) { std::ofstream(path_, std::ios::app) << s; }
  std::string path_;
};

TEST_F(ProgressFileReaderTest, NoFileIsNoReport) {
  ProgressFileReader r(path_);
  EXPECT_FALSE(r.Read().has_value());
}

TEST_F(ProgressFileReaderTest, ReadsTheLatestLineAndCountsMalformedOnce) {
  ProgressFileReader r(path_);
  Append("{\"step\": 1, \"totalSteps\": 10}\nnoise\n{\"step\": 2, \"totalSteps\": 10}\n");
  std::optional<TrainingProgress> p = r.Read();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 2u);
  EXPECT_EQ(p->total_steps, 10u);
  EXPECT_EQ(p->malformed_lines, 1u);
  // Nothing new: the same report, the malformed line not counted again.
  p = r.Read();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 2u);
  EXPECT_EQ(p->malformed_lines, 1u);
  // Half a line: not yet; once finished, read.
  Append("{\"step\": 3");
  EXPECT_EQ(r.Read()->step, 2u);
  Append(", \"totalSteps\": 10}\n");
  EXPECT_EQ(r.Read()->step, 3u);
}

TEST_F(ProgressFileReaderTest, ReadsOnlyTheTailOfAHugeAppend) {
  ProgressFileReader r(path_);
  std::string big;
  for (int i = 0; big.size() < 3 * kMaxTailBytes; ++i) {
    big += "{\"step\": " + std::to_string(i) + "}\n";
    if (i % 100 == 0) big += "bad\n";
  }
  big += "{\"step\": 999999}\n";
  Append(big);
  std::optional<TrainingProgress> p = r.Read();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 999999u);
  // Only the malformed lines of the last kMaxTailBytes were seen.
  EXPECT_GT(p->malformed_lines, 0u);
  EXPECT_LT(p->malformed_lines, 3 * kMaxTailBytes / 1000);
}

TEST_F(ProgressFileReaderTest, TruncatesAFileOverTheCapAndKeepsTheReport) {
  ProgressFileReader r(path_);
  std::string big;
  while (big.size() <= kMaxFileBytes) big += "{\"step\": 5}\n";
  Append(big);
  EXPECT_EQ(r.Read()->step, 5u);
  std::ifstream in(path_, std::ios::ate);
  EXPECT_EQ(static_cast<long>(in.tellg()), 0) << "the file was not truncated";
  EXPECT_EQ(r.Read()->step, 5u);  // the report stands until a new line comes
  Append("{\"step\": 6}\n");
  EXPECT_EQ(r.Read()->step, 6u);
}

TEST_F(ProgressFileReaderTest, ATrainerThatRewritesTheFileIsReadFromItsStart) {
  ProgressFileReader r(path_);
  Append("{\"step\": 40}\n{\"step\": 41}\n");
  EXPECT_EQ(r.Read()->step, 41u);
  std::ofstream(path_, std::ios::trunc) << "{\"step\": 7}\n";
  EXPECT_EQ(r.Read()->step, 7u);
}

TEST_F(ProgressFileReaderTest, ASymlinkIsNotFollowed) {
  const std::string target = path_ + ".target";
  std::ofstream(target) << "{\"step\": 3}\n";
  ASSERT_EQ(::symlink(target.c_str(), path_.c_str()), 0);
  ProgressFileReader r(path_);
  EXPECT_FALSE(r.Read().has_value());
  ::unlink(target.c_str());
}

// One look per row: seconds since the start, reports read so far, the latest step; and whether
// the watch calls it stalled. Hang timeout 10 s; 2 reports were read before the attempt.
TEST(ProgressStallWatchTest, Table) {
  struct Look {
    double at_s;
    uint64_t reports;
    uint64_t step;
    bool stalled;
    uint64_t total = 0;
  };
  struct Row {
    const char* name;
    std::vector<Look> looks;
  };
  const std::vector<Row> rows = {
      {"no report in this attempt is never judged (the old round's report stands)",
       {{0, 2, 500, false}, {30, 2, 500, false}, {300, 2, 500, false}}},
      {"one report alone is never judged: the trainer's pace is unknown",
       {{1, 3, 7, false}, {30, 3, 7, false}, {100, 4, 7, false}}},
      {"a resumed trainer's first report may repeat the old step; it still starts the clock",
       {{1, 3, 500, false}, {2, 4, 501, false}, {11, 4, 501, false}, {13, 5, 501, true}}},
      {"steady steps every second, then none: stalled after the timeout",
       {{1, 3, 1, false}, {2, 4, 2, false}, {3, 5, 3, false}, {12.9, 5, 3, false},
        {13.1, 5, 3, true}}},
      {"new lines repeating the same step are no progress",
       {{1, 3, 1, false}, {2, 4, 2, false}, {6, 9, 2, false}, {12.5, 20, 2, true}}},
      {"a slow reporter (every 100 steps, 20 s apart) is judged at 3 x its pace, not 10 s",
       {{0, 3, 100, false}, {20, 4, 200, false}, {40, 5, 300, false}, {90, 5, 300, false},
        {100.5, 5, 300, true}}},
      {"the last step reported (step == totalSteps): finishing, never judged",
       {{1, 3, 9, false, 10}, {2, 4, 10, false, 10}, {60, 4, 10, false, 10}}},
      {"totalSteps known but not reached: judged",
       {{1, 3, 8, false, 10}, {2, 4, 9, false, 10}, {12.5, 4, 9, true, 10}}},
      {"a step going back (a trainer's own rewind) is a change",
       {{1, 3, 10, false}, {2, 4, 11, false}, {5, 5, 3, false}, {14, 5, 3, false},
        {15.5, 5, 3, true}}},
  };
  for (const Row& row : rows) {
    ProgressStallWatch watch(2);
    const auto t0 = ProgressStallWatch::Steady::time_point{} + std::chrono::hours(1);
    for (const Look& look : row.looks) {
      const auto now =
          t0 + std::chrono::duration_cast<ProgressStallWatch::Steady::duration>(
                   std::chrono::duration<double>(look.at_s));
      const std::optional<std::string> stalled =
          watch.Observe(now, look.reports, look.step, look.total, std::chrono::seconds(10));
      EXPECT_EQ(stalled.has_value(), look.stalled) << row.name << " at " << look.at_s << " s";
      if (stalled) {
        EXPECT_NE(stalled->find("stuck at step " + std::to_string(look.step)), std::string::npos)
            << *stalled;
      }
    }
  }
}

TEST(ProgressStallWatchTest, OffWithoutAHangTimeout) {
  ProgressStallWatch watch(0);
  const auto t0 = ProgressStallWatch::Steady::time_point{} + std::chrono::hours(1);
  EXPECT_FALSE(watch.Observe(t0, 1, 1, 0, std::chrono::milliseconds(0)));
  EXPECT_FALSE(watch.Observe(t0 + std::chrono::seconds(1), 2, 2, 0, std::chrono::milliseconds(0)));
  EXPECT_FALSE(watch.Observe(t0 + std::chrono::hours(1), 2, 2, 0, std::chrono::milliseconds(0)));
}

TEST_F(ProgressFileReaderTest, CountsWellFormedReportsAcrossReads) {
  ProgressFileReader r(path_);
  Append("{\"step\": 1}\nnot a report\n{\"step\": 2}\n");
  uint64_t reports = 0;
  ASSERT_TRUE(r.Read(&reports));
  EXPECT_EQ(reports, 2u);
  Append("{\"step\": 2}\n");
  ASSERT_TRUE(r.Read(&reports));
  EXPECT_EQ(reports, 3u) << "the same step again is still a new report";
  EXPECT_EQ(r.reports(), 3u);
}

}  // namespace
}  // namespace lockstep::launcher::progress
