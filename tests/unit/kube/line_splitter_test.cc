// LineSplitter: the watch stream's framing, as the curl transport and the watch-stream fuzz
// target use it.
#include "operator/kube/line_splitter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace lockstep::kube {
namespace {

struct Collected {
  std::vector<std::string> lines;
  LineHandler handler() {
    return [this](std::string_view line) {
      lines.emplace_back(line);
      return true;
    };
  }
};

TEST(LineSplitterTest, JoinsLinesAcrossChunksAndSkipsBlankOnes) {
  LineSplitter splitter;
  Collected got;
  for (std::string_view chunk : {"{\"a\"", ":1}\n\n{\"b\":2}", "\n{\"c\"", ""}) {
    EXPECT_EQ(splitter.Append(chunk, got.handler()), LineSplitter::Result::kMore);
  }
  EXPECT_EQ(got.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(splitter.buffered(), 4u);  // {"c" waits for its newline
}

TEST(LineSplitterTest, StopsWhenTheHandlerSaysSo) {
  LineSplitter splitter;
  int calls = 0;
  EXPECT_EQ(splitter.Append("a\nb\nc\n", [&](std::string_view) { return ++calls < 2; }),
            LineSplitter::Result::kStopped);
  EXPECT_EQ(calls, 2);
}

TEST(LineSplitterTest, ALineLongerThanTheBoundEndsTheStream) {
  Collected got;
  LineSplitter whole(8);
  EXPECT_EQ(whole.Append("short\n0123456789\n", got.handler()), LineSplitter::Result::kTooLong);
  EXPECT_EQ(got.lines, (std::vector<std::string>{"short"}));
  // A partial line is refused as soon as it passes the bound, before its newline arrives.
  LineSplitter partial(8);
  EXPECT_EQ(partial.Append("01234", got.handler()), LineSplitter::Result::kMore);
  EXPECT_EQ(partial.Append("56789", got.handler()), LineSplitter::Result::kTooLong);
}

TEST(LineSplitterTest, ALongLineInSmallChunksIsScannedOnce) {
  // 4 MiB in 64-byte chunks: rescanning the partial line per chunk (the old loop) scanned
  // 128 GiB, tens of seconds; scanning only new bytes takes milliseconds, so 5 s is a bound
  // that no load makes flaky and that the quadratic loop cannot meet.
  LineSplitter splitter;
  Collected got;
  const std::string chunk(64, 'x');
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 65536; ++i) splitter.Append(chunk, got.handler());
  EXPECT_EQ(splitter.Append("\n", got.handler()), LineSplitter::Result::kMore);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(got.lines.size(), 1u);
  EXPECT_EQ(got.lines[0].size(), 4u * 1024 * 1024);
}

}  // namespace
}  // namespace lockstep::kube
