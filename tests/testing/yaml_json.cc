#include "tests/testing/yaml_json.h"

#include <regex>

namespace lockstep::testing {

using nlohmann::json;

json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const YAML::Node& item : node) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: always a string
  static const std::regex kInt("^-?[0-9]+$");
  if (std::regex_match(text, kInt)) return std::stoll(text);
  if (text == "true") return true;
  if (text == "false") return false;
  if (text == "null" || text == "~") return nullptr;
  return text;
}

std::vector<json> LoadYamlFile(const std::string& path) {
  std::vector<json> docs;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(path)) {
    if (doc.IsNull()) continue;
    docs.push_back(YamlToJson(doc));
  }
  return docs;
}

}  // namespace lockstep::testing
