#include "common/log.h"

#include <gtest/gtest.h>

namespace lockstep::log {
namespace {

TEST(LogTest, JsonRecordEscapesAndCarriesFields) {
  std::string rec = FormatRecord(Format::kJson, Level::kWarning, "operator", "a \"quoted\"\nline",
                                 {{"job", "ns/x"}, {"n", "3"}});
  EXPECT_NE(rec.find("\"level\":\"warning\""), std::string::npos);
  EXPECT_NE(rec.find("\"msg\":\"a \\\"quoted\\\"\\nline\""), std::string::npos);
  EXPECT_NE(rec.find("\"job\":\"ns/x\""), std::string::npos);
  EXPECT_EQ(rec.back(), '\n');
  EXPECT_EQ(rec.find('\n'), rec.size() - 1) << "one record, one line";
}

TEST(LogTest, TextRecordQuotesValuesWithSpaces) {
  std::string rec = FormatRecord(Format::kText, Level::kInfo, "", "started", {{"why", "two words"}});
  EXPECT_NE(rec.find("info started why=\"two words\""), std::string::npos);
}

TEST(LogTest, ParseFormat) {
  Format f = Format::kText;
  EXPECT_TRUE(ParseFormat("json", &f));
  EXPECT_EQ(f, Format::kJson);
  EXPECT_FALSE(ParseFormat("yaml", &f));
}

}  // namespace
}  // namespace lockstep::log
