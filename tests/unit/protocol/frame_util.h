#pragma once
// Helpers for the protocol's codec tests: the one frame an encoded message makes, and bytes as
// hex (to compare encodings with the bytes a version puts on the wire).

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "protocol/frame.h"

namespace lockstep::protocol::testing {

inline Frame Only(const std::string& bytes) {
  FrameDecoder d;
  d.Append(bytes);
  auto f = d.Next();
  EXPECT_TRUE(f.ok());
  EXPECT_TRUE(f->has_value());
  return **f;
}

// Lower-case hex of `bytes`.
inline std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {kDigits[c >> 4], kDigits[c & 15]};
  return out;
}

}  // namespace lockstep::protocol::testing
