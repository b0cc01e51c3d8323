#pragma once
// Lenient field lookups for the decoders of cached objects (objects.cc, the scheduler's volume
// objects, Kueue's Workload view), which keep what they can read and leave the rest empty
// instead of refusing the object.
//
// Contract: `Field(j, key)` is `j`'s member `key`, or a null value when `j` is not an object or
// has no such member; it never throws and never inserts. The null is a static, so the reference
// stays valid as long as `j` does. `Str(j, key)` is that member when it is a string, else "".

#include <string>

#include <nlohmann/json.hpp>

namespace lockstep::kube {

inline const nlohmann::json& Field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

inline std::string Str(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

}  // namespace lockstep::kube
