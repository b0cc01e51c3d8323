#pragma once
// Path-aware readers for decoding API objects that may have bypassed the apiserver's validation
// (stored before a rule existed, written by an old client). Every error names the field with its
// full path ("spec.failurePolicy.maxRestarts: expected an integer, got string"). None throws.
//
// Convention: an absent or null field leaves *out untouched (so member initializers act as
// defaults) and returns OK; a present field of the wrong type is an InvalidArgument error.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::api::internal {

// "spec" + "replicas" -> "spec.replicas"; "spec.roles" + 2 -> "spec.roles[2]".
std::string FieldPath(std::string_view parent, std::string_view key);
std::string IndexPath(std::string_view parent, size_t index);

// The named member of `obj`, or nullptr when absent or null.
const nlohmann::json* Member(const nlohmann::json& obj, std::string_view key);

Status TypeError(std::string_view path, std::string_view expected, const nlohmann::json& got);
Status MissingError(std::string_view path);

Status ReadString(const nlohmann::json& obj, std::string_view key, std::string_view path,
                  std::string* out);
Status ReadOptString(const nlohmann::json& obj, std::string_view key, std::string_view path,
                     std::optional<std::string>* out);
Status ReadBool(const nlohmann::json& obj, std::string_view key, std::string_view path, bool* out);
Status ReadInt64(const nlohmann::json& obj, std::string_view key, std::string_view path,
                 int64_t* out);
Status ReadInt32(const nlohmann::json& obj, std::string_view key, std::string_view path,
                 int32_t* out);
Status ReadOptInt32(const nlohmann::json& obj, std::string_view key, std::string_view path,
                    std::optional<int32_t>* out);
Status ReadOptInt64(const nlohmann::json& obj, std::string_view key, std::string_view path,
                    std::optional<int64_t>* out);
Status ReadStringList(const nlohmann::json& obj, std::string_view key, std::string_view path,
                      std::vector<std::string>* out);
Status ReadStringMap(const nlohmann::json& obj, std::string_view key, std::string_view path,
                     std::map<std::string, std::string>* out);
Status ReadOptTime(const nlohmann::json& obj, std::string_view key, std::string_view path,
                   std::optional<std::chrono::system_clock::time_point>* out);

// Reads an enum through its parser; an unknown name is an error that lists the field.
template <typename E>
Status ReadEnum(const nlohmann::json& obj, std::string_view key, std::string_view path,
                std::optional<E> (*parse)(std::string_view), E* out) {
  std::optional<std::string> name;
  LS_RETURN_IF_ERROR(ReadOptString(obj, key, path, &name));
  if (!name) return Status::Ok();
  std::optional<E> value = parse(*name);
  if (!value) {
    return InvalidArgumentError(FieldPath(path, key) + ": unsupported value \"" + *name + "\"");
  }
  *out = *value;
  return Status::Ok();
}

// Calls `each(element, element_path)` for every element of the array member `key`.
Status ForEachElement(const nlohmann::json& obj, std::string_view key, std::string_view path,
                      const std::function<Status(const nlohmann::json&, const std::string&)>& each);

}  // namespace lockstep::api::internal
