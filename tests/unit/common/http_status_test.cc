#include "common/http_status.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(HttpReasonPhraseTest, TheCodesOurServersAnswerAndAFallback) {
  EXPECT_EQ(HttpReasonPhrase(200), "OK");
  EXPECT_EQ(HttpReasonPhrase(401), "Unauthorized");
  EXPECT_EQ(HttpReasonPhrase(403), "Forbidden");
  EXPECT_EQ(HttpReasonPhrase(500), "Internal Server Error");
  EXPECT_EQ(HttpReasonPhrase(503), "Service Unavailable");
  EXPECT_EQ(HttpReasonPhrase(418), "Status");
  static_assert(HttpReasonPhrase(404) == "Not Found");
}

}  // namespace
}  // namespace lockstep
