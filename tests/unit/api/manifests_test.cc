// The repository's manifests against the C++ mirror of the CRD: every example decodes and
// validates; every invalid manifest of the CRD integration test is rejected by the C++ side too
// (by the decoder or by Validate), so the operator never acts on what the apiserver refuses.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "operator/api/codec.h"
#include "operator/api/template_merge.h"
#include "operator/api/validation.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<fs::path> YamlFiles(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(testing::SourcePath(dir))) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".yaml" && name.find(".base.") == std::string::npos) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Objects as the apiserver would see them: namespaced and with a uid.
json AsStored(json doc) {
  doc["metadata"]["namespace"] = "test";
  doc["metadata"]["uid"] = "uid";
  return doc;
}

TEST(ManifestsTest, EveryExampleDecodesAndValidates) {
  const std::vector<fs::path> files = YamlFiles("examples");
  ASSERT_GE(files.size(), 7u);
  for (const fs::path& file : files) {
    for (const json& doc : testing::LoadYamlFile(file.string())) {
      if (doc.value("kind", "") != "TrainingJob") continue;
      StatusOr<TrainingJob> job = DecodeTrainingJob(AsStored(doc));
      ASSERT_TRUE(job.ok()) << file << ": " << job.status();
      EXPECT_TRUE(Validate(*job).empty()) << file << ": " << ToStatus(Validate(*job));
    }
  }
}

// examples/templates/ and examples/local/templates/: every job there names a template of its
// folder and, merged with it (operator/api/template_merge.h), decodes and validates; and states
// it in under 15 lines.
class TemplatedExamplesTest : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Folders, TemplatedExamplesTest,
                         ::testing::Values("examples/templates", "examples/local/templates"));

TEST_P(TemplatedExamplesTest, EveryJobMergesIntoAValidJob) {
  std::map<std::string, json> templates;  // "Kind/name" -> spec
  std::vector<std::pair<fs::path, json>> jobs;
  for (const fs::path& file : YamlFiles(GetParam())) {
    for (const json& doc : testing::LoadYamlFile(file.string())) {
      const std::string kind = doc.value("kind", "");
      if (kind == "TrainingJob") {
        jobs.emplace_back(file, doc);
      } else {
        templates[kind + "/" + doc["metadata"]["name"].get<std::string>()] = doc["spec"];
      }
    }
  }
  ASSERT_GE(templates.size(), 1u);
  ASSERT_GE(jobs.size(), 1u);
  for (const auto& [file, doc] : jobs) {
    StatusOr<std::optional<TemplateRef>> ref = DecodeTemplateRef(doc["spec"]);
    ASSERT_TRUE(ref.ok() && ref->has_value()) << file;
    auto tmpl = templates.find(Describe(**ref));
    ASSERT_NE(tmpl, templates.end()) << file << " names " << Describe(**ref);
    StatusOr<json> merged = MergeTemplateSpec(tmpl->second, doc["spec"]);
    ASSERT_TRUE(merged.ok()) << file << ": " << merged.status();
    json object = AsStored(doc);
    object["spec"] = *merged;
    StatusOr<TrainingJob> job = DecodeTrainingJob(object);
    ASSERT_TRUE(job.ok()) << file << ": " << job.status();
    EXPECT_TRUE(Validate(*job).empty()) << file << ": " << ToStatus(Validate(*job));
    std::ifstream in(file);
    int lines = 0;
    for (std::string line; std::getline(in, line);) lines += !line.empty() && line[0] != '#';
    EXPECT_LT(lines, 15) << file;
  }
}

// Immutable-field cases (a .base.yaml next to them) need an update and are checked with
// ValidateUpdate; the rest must fail decoding or validation on their own.
TEST(ManifestsTest, EveryInvalidManifestIsRejected) {
  const std::vector<fs::path> files = YamlFiles("tests/integration/crd/invalid");
  ASSERT_GE(files.size(), 15u);
  for (const fs::path& file : files) {
    const std::vector<json> docs = testing::LoadYamlFile(file.string());
    ASSERT_EQ(docs.size(), 1u) << file;
    StatusOr<TrainingJob> job = DecodeTrainingJob(AsStored(docs[0]));
    fs::path base = file;
    base.replace_extension(".base.yaml");
    if (fs::exists(base)) {
      ASSERT_TRUE(job.ok()) << file << ": " << job.status();
      StatusOr<TrainingJob> old_job = DecodeTrainingJob(AsStored(testing::LoadYamlFile(base)[0]));
      ASSERT_TRUE(old_job.ok()) << base << ": " << old_job.status();
      EXPECT_TRUE(Validate(*old_job).empty()) << base;
      EXPECT_FALSE(ValidateUpdate(*old_job, *job).empty()) << file << " was accepted";
      continue;
    }
    const bool rejected = !job.ok() || !Validate(*job).empty();
    EXPECT_TRUE(rejected) << file << " was accepted by the C++ validation";
  }
}

}  // namespace
}  // namespace lockstep::api
