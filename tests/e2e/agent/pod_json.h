#pragma once
// Tolerant readers of pod JSON: a missing or mistyped field reads as empty, never throws.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::e2e {

// The string at a JSON pointer ("/metadata/name"), or "".
inline std::string Str(const nlohmann::json& j, const char* pointer) {
  const nlohmann::json::json_pointer ptr(pointer);
  return j.contains(ptr) && j.at(ptr).is_string() ? j.at(ptr).get<std::string>() : "";
}

// The array under `key`, or an empty array.
inline nlohmann::json Array(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_array() ? j[key] : nlohmann::json::array();
}

// The strings of the array under `key`.
inline std::vector<std::string> Strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  for (const nlohmann::json& s : Array(j, key)) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace lockstep::e2e
