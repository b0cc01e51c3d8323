#include "operator/kube/base64.h"

#include <gtest/gtest.h>

namespace lockstep::kube {
namespace {

// Secret data and kubeconfig *-data fields (the test node agent reads Secrets with it too).
TEST(Base64DecodeTest, StandardAlphabetWithPaddingAndLineBreaks) {
  EXPECT_EQ(*Base64Decode("aGVsbG8gd29ybGQ="), "hello world");
  EXPECT_EQ(*Base64Decode("YQ=="), "a");
  EXPECT_EQ(*Base64Decode(""), "");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_FALSE(Base64Decode("a*b=").ok());
  EXPECT_FALSE(Base64Decode("aGVs-bG8").ok());  // the URL-safe alphabet is not the API's
}

TEST(Base64EncodeTest, PadsAndRoundTrips) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("a"), "YQ==");
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  EXPECT_EQ(Base64Encode("hello world"), "aGVsbG8gd29ybGQ=");
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  EXPECT_EQ(*Base64Decode(Base64Encode(bytes)), bytes);
}

}  // namespace
}  // namespace lockstep::kube
