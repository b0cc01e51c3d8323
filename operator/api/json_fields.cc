#include "operator/api/json_fields.h"

#include <limits>

#include "operator/api/time.h"

namespace lockstep::api::internal {

using nlohmann::json;

std::string FieldPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string out(parent);
  out += '.';
  out += key;
  return out;
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

const json* Member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status TypeError(std::string_view path, std::string_view expected, const json& got) {
  return InvalidArgumentError(std::string(path) + ": expected " + std::string(expected) + ", got " +
                              got.type_name());
}

Status MissingError(std::string_view path) {
  return InvalidArgumentError(std::string(path) + ": required field is missing");
}

Status ReadString(const json& obj, std::string_view key, std::string_view path, std::string* out) {
  std::optional<std::string> value;
  LS_RETURN_IF_ERROR(ReadOptString(obj, key, path, &value));
  if (value) *out = std::move(*value);
  return Status::Ok();
}

Status ReadOptString(const json& obj, std::string_view key, std::string_view path,
                     std::optional<std::string>* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return TypeError(FieldPath(path, key), "a string", *v);
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ReadBool(const json& obj, std::string_view key, std::string_view path, bool* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return TypeError(FieldPath(path, key), "a boolean", *v);
  *out = v->get<bool>();
  return Status::Ok();
}

Status ReadInt64(const json& obj, std::string_view key, std::string_view path, int64_t* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  // JSON has one number type: accept 3.0 (some clients write it) but not 3.5.
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgumentError(FieldPath(path, key) + ": integer out of range");
    }
    *out = v->get<int64_t>();
    return Status::Ok();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    // Range first: converting a double outside int64 (1e300) is undefined behaviour.
    constexpr double kTwo63 = 9223372036854775808.0;
    if (!(d >= -kTwo63 && d < kTwo63)) {
      return InvalidArgumentError(FieldPath(path, key) + ": integer out of range");
    }
    if (d == static_cast<double>(static_cast<int64_t>(d))) {
      *out = static_cast<int64_t>(d);
      return Status::Ok();
    }
  }
  return TypeError(FieldPath(path, key), "an integer", *v);
}

Status ReadInt32(const json& obj, std::string_view key, std::string_view path, int32_t* out) {
  std::optional<int32_t> value;
  LS_RETURN_IF_ERROR(ReadOptInt32(obj, key, path, &value));
  if (value) *out = *value;
  return Status::Ok();
}

Status ReadOptInt32(const json& obj, std::string_view key, std::string_view path,
                    std::optional<int32_t>* out) {
  if (Member(obj, key) == nullptr) return Status::Ok();
  int64_t wide = 0;
  LS_RETURN_IF_ERROR(ReadInt64(obj, key, path, &wide));
  if (wide < std::numeric_limits<int32_t>::min() || wide > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError(FieldPath(path, key) + ": integer out of int32 range");
  }
  *out = static_cast<int32_t>(wide);
  return Status::Ok();
}

Status ReadOptInt64(const json& obj, std::string_view key, std::string_view path,
                    std::optional<int64_t>* out) {
  if (Member(obj, key) == nullptr) return Status::Ok();
  int64_t value = 0;
  LS_RETURN_IF_ERROR(ReadInt64(obj, key, path, &value));
  *out = value;
  return Status::Ok();
}

Status ReadStringList(const json& obj, std::string_view key, std::string_view path,
                      std::vector<std::string>* out) {
  return ForEachElement(obj, key, path, [out](const json& item, const std::string& item_path) {
    if (!item.is_string()) return TypeError(item_path, "a string", item);
    out->push_back(item.get<std::string>());
    return Status::Ok();
  });
}

Status ReadStringMap(const json& obj, std::string_view key, std::string_view path,
                     std::map<std::string, std::string>* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_object()) return TypeError(FieldPath(path, key), "an object", *v);
  for (const auto& [k, item] : v->items()) {
    if (!item.is_string()) return TypeError(FieldPath(FieldPath(path, key), k), "a string", item);
    (*out)[k] = item.get<std::string>();
  }
  return Status::Ok();
}

Status ReadOptTime(const json& obj, std::string_view key, std::string_view path,
                   std::optional<std::chrono::system_clock::time_point>* out) {
  std::optional<std::string> text;
  LS_RETURN_IF_ERROR(ReadOptString(obj, key, path, &text));
  if (!text) return Status::Ok();
  StatusOr<std::chrono::system_clock::time_point> t = ParseTime(*text);
  if (!t.ok()) return t.status().WithContext(FieldPath(path, key));
  *out = *t;
  return Status::Ok();
}

Status ForEachElement(const json& obj, std::string_view key, std::string_view path,
                      const std::function<Status(const json&, const std::string&)>& each) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  const std::string list_path = FieldPath(path, key);
  if (!v->is_array()) return TypeError(list_path, "an array", *v);
  for (size_t i = 0; i < v->size(); ++i) {
    LS_RETURN_IF_ERROR(each((*v)[i], IndexPath(list_path, i)));
  }
  return Status::Ok();
}

}  // namespace lockstep::api::internal
