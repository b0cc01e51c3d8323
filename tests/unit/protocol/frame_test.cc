#include "protocol/frame.h"

#include <gtest/gtest.h>

namespace lockstep::protocol {
namespace {

TEST(FrameTest, RoundTripsOneFrame) {
  FrameDecoder d;
  d.Append(EncodeFrame(7, "hello"));
  StatusOr<std::optional<Frame>> f = d.Next();
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->type, 7);
  EXPECT_EQ((*f)->body, "hello");
  StatusOr<std::optional<Frame>> none = d.Next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameTest, DecodesByteByByteAndBackToBack) {
  std::string stream;
  AppendFrame(1, "", &stream);
  AppendFrame(2, std::string(1000, 'x'), &stream);
  AppendFrame(3, "z", &stream);
  FrameDecoder d;
  std::vector<Frame> got;
  for (char c : stream) {
    d.Append(std::string_view(&c, 1));
    for (;;) {
      auto f = d.Next();
      ASSERT_TRUE(f.ok());
      if (!f->has_value()) break;
      got.push_back(**f);
    }
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].type, 1);
  EXPECT_EQ(got[0].body, "");
  EXPECT_EQ(got[1].body.size(), 1000u);
  EXPECT_EQ(got[2].body, "z");
}

TEST(FrameTest, RejectsOversizeLengthBeforeBufferingBody) {
  FrameDecoder d(/*max_frame_bytes=*/16);
  d.Append(std::string("\x00\x00\x00\x11", 4));  // 17 > 16
  auto f = d.Next();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  // The stream stays poisoned.
  d.Append(EncodeFrame(1, "ok"));
  EXPECT_FALSE(d.Next().ok());
}

TEST(FrameTest, RejectsZeroLength) {
  FrameDecoder d;
  d.Append(std::string(4, '\0'));
  EXPECT_FALSE(d.Next().ok());
}

TEST(FrameTest, AcceptsFrameAtExactLimit) {
  FrameDecoder d(/*max_frame_bytes=*/8);
  d.Append(EncodeFrame(9, std::string(7, 'a')));
  auto f = d.Next();
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->body, std::string(7, 'a'));
}

}  // namespace
}  // namespace lockstep::protocol
