// Static checks of crds/lockstep.dev_trainingjobs.yaml that the apiserver does not make:
// `kubectl explain` needs a description on every field, every CEL rule needs a message that
// names its field, and keyed lists need their keys so server-side apply merges them.

#include <gtest/gtest.h>

#include "operator/api/enums.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

json Schema() {
  const std::vector<json> docs =
      testing::LoadYamlFile(testing::SourcePath("crds/lockstep.dev_trainingjobs.yaml"));
  EXPECT_EQ(docs.size(), 1u);
  return docs.empty() ? json() : docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

// Calls `visit(node, path)` for every schema node below `node`.
void Walk(const json& node, const std::string& path,
          const std::function<void(const json&, const std::string&)>& visit) {
  visit(node, path);
  if (node.contains("properties")) {
    for (const auto& [name, sub] : node["properties"].items()) Walk(sub, path + "." + name, visit);
  }
  if (node.contains("items")) Walk(node["items"], path + "[]", visit);
  if (node.contains("additionalProperties") && node["additionalProperties"].is_object()) {
    Walk(node["additionalProperties"], path + "{}", visit);
  }
}

TEST(CrdSchemaTest, EveryFieldHasADescription) {
  const json schema = Schema();
  int fields = 0;
  for (const char* top : {"spec", "status"}) {
    Walk(schema["properties"][top], top, [&fields](const json& node, const std::string& path) {
      // Scalar list items and map values are described by their list or map.
      if (path.ends_with("[]") && node.value("type", "") != "object") return;
      if (path.ends_with("{}")) return;
      ++fields;
      EXPECT_FALSE(node.value("description", "").empty()) << path << " has no description";
    });
  }
  EXPECT_GT(fields, 80);
}

TEST(CrdSchemaTest, EveryRuleHasAMessageNamingAField) {
  int rules = 0;
  Walk(Schema(), "", [&rules](const json& node, const std::string& path) {
    if (!node.contains("x-kubernetes-validations")) return;
    for (const json& rule : node["x-kubernetes-validations"]) {
      ++rules;
      const std::string message = rule.value("message", "");
      EXPECT_FALSE(message.empty()) << path << ": " << rule.dump();
      const bool names_field = message.find("spec.") != std::string::npos ||
                               message.find("metadata.name") != std::string::npos ||
                               message.find("trainer") != std::string::npos;
      EXPECT_TRUE(names_field) << path << ": " << message;
      EXPECT_TRUE(rule.contains("reason")) << path << ": " << message;
    }
  });
  EXPECT_GE(rules, 15);
}

TEST(CrdSchemaTest, KeyedListsAreListMaps) {
  const json schema = Schema();
  const json& spec = schema["properties"]["spec"]["properties"];
  const json& roles = spec["roles"];
  EXPECT_EQ(roles["x-kubernetes-list-type"], "map");
  EXPECT_EQ(roles["x-kubernetes-list-map-keys"], json({"name"}));
  const json& conditions = schema["properties"]["status"]["properties"]["conditions"];
  EXPECT_EQ(conditions["x-kubernetes-list-type"], "map");
  EXPECT_EQ(conditions["x-kubernetes-list-map-keys"], json({"type"}));
  // Map keys must be required, or the apiserver refuses the list-map.
  Walk(schema, "", [](const json& node, const std::string& path) {
    if (node.value("x-kubernetes-list-type", "") != "map") return;
    for (const json& key : node["x-kubernetes-list-map-keys"]) {
      const json& required = node["items"]["required"];
      EXPECT_NE(std::find(required.begin(), required.end(), key), required.end())
          << path << ": key " << key << " is not required";
    }
  });
}

// The restart fields the controller writes are typed (enums.h); the CRD admits exactly their
// names, so a status the operator wrote always decodes.
TEST(CrdSchemaTest, RestartModeAndRequestStateEnumsAreTheApiNames) {
  const json status = Schema()["properties"]["status"]["properties"];
  const json modes = {std::string(ToString(RestartMode::kInPlace)),
                      std::string(ToString(RestartMode::kRecreate))};
  EXPECT_EQ(status["lastRestart"]["properties"]["mode"]["enum"], modes);
  EXPECT_EQ(status["restartRequest"]["properties"]["mode"]["enum"], modes);
  json states = json::array();
  for (RestartRequestState s : {RestartRequestState::kPending, RestartRequestState::kCompleted,
                                RestartRequestState::kFellBack, RestartRequestState::kRecreated,
                                RestartRequestState::kSuperseded}) {
    states.push_back(std::string(ToString(s)));
    EXPECT_EQ(ParseRestartRequestState(ToString(s)), s);
  }
  EXPECT_EQ(status["restartRequest"]["properties"]["state"]["enum"], states);
}

}  // namespace
}  // namespace lockstep::api
