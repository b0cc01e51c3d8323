#pragma once
// The one frame an encoded message makes, for the codec tests.

#include <gtest/gtest.h>

#include <string>

#include "launcher/rendezvous/frame.h"

namespace lockstep::launcher::rendezvous::testing {

inline Frame Only(const std::string& bytes) {
  FrameDecoder d;
  d.Append(bytes);
  auto f = d.Next();
  EXPECT_TRUE(f.ok());
  EXPECT_TRUE(f->has_value());
  return **f;
}

}  // namespace lockstep::launcher::rendezvous::testing
