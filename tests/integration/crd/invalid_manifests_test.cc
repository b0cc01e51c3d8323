// Every manifest in invalid/ must be refused by `kubectl apply` with a message naming the field:
// invalid/<case>.yaml holds the manifest, invalid/<case>.expect the substring the apiserver's
// answer must contain, and an optional invalid/<case>.base.yaml is applied first (the update
// cases: immutable fields).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/crd/kubectl.h"

namespace lockstep::crdtest {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> InvalidCases() {
  std::vector<std::string> cases;
  for (const auto& entry : fs::directory_iterator(SourcePath("tests/integration/crd/invalid"))) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() == ".yaml" && file.find(".base.") == std::string::npos) {
      cases.push_back(entry.path().stem().string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::string ReadTrimmed(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class InvalidManifestTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LS_REQUIRE_CLUSTER();
    InstallCrd();
  }
};

TEST_P(InvalidManifestTest, IsRejectedWithAMessageNamingTheField) {
  const fs::path dir = SourcePath("tests/integration/crd/invalid");
  const std::string& name = GetParam();
  const std::string expect = ReadTrimmed(dir / (name + ".expect"));
  ASSERT_FALSE(expect.empty()) << "missing " << name << ".expect";
  TestNamespace ns;
  const fs::path base = dir / (name + ".base.yaml");
  const bool is_update = fs::exists(base);
  if (is_update) {
    const KubectlResult created = Kubectl({"apply", "-n", ns.name(), "-f", base.string()});
    ASSERT_TRUE(created.ok()) << "the base manifest must be valid: " << created.output;
  }
  const KubectlResult applied =
      Kubectl({"apply", "-n", ns.name(), "-f", (dir / (name + ".yaml")).string()});
  EXPECT_FALSE(applied.ok()) << "accepted: " << applied.output;
  EXPECT_THAT(applied.output, ::testing::HasSubstr(expect));

  // Nothing was stored (create) or changed (update).
  const KubectlResult stored = Kubectl(
      {"get", "trainingjobs", "-n", ns.name(), "-o", "jsonpath={.items[*].metadata.generation}"});
  ASSERT_TRUE(stored.ok()) << stored.output;
  EXPECT_EQ(stored.output, is_update ? "1" : "");
}

INSTANTIATE_TEST_SUITE_P(Manifests, InvalidManifestTest, ::testing::ValuesIn(InvalidCases()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string id = p.param;
                           std::replace(id.begin(), id.end(), '-', '_');
                           return id;
                         });

TEST(InvalidManifestsTest, AtLeastFifteenDistinctCases) { EXPECT_GE(InvalidCases().size(), 15u); }

}  // namespace
}  // namespace lockstep::crdtest
