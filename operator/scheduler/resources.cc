#include "operator/scheduler/resources.h"

#include <algorithm>

#include "operator/scheduler/resource_units.h"

namespace lockstep::scheduler {

Resources::Resources(std::initializer_list<Entry> entries) {
  for (const Entry& e : entries) Set(e.first, e.second);
}

int64_t Resources::Get(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& e, std::string_view n) { return e.first < n; });
  return it != entries_.end() && it->first == name ? it->second : 0;
}

void Resources::Set(std::string_view name, int64_t value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& e, std::string_view n) { return e.first < n; });
  const bool present = it != entries_.end() && it->first == name;
  if (value == 0) {
    if (present) entries_.erase(it);
  } else if (present) {
    it->second = value;
  } else {
    entries_.insert(it, Entry(std::string(name), value));
  }
}

Resources& Resources::operator+=(const Resources& other) {
  for (const Entry& e : other.entries_) Add(e.first, e.second);
  return *this;
}

std::string Resources::ToString() const {
  std::string out;
  for (const Entry& e : entries_) {
    if (!out.empty()) out += ", ";
    out += e.first + "=" + FormatResourceQuantity(e.first, e.second);
  }
  return out;
}

StatusOr<Resources> ParseResourceList(const std::map<std::string, std::string>& list) {
  Resources out;
  for (const auto& [name, text] : list) {
    LS_ASSIGN_OR_RETURN(int64_t value, ParseResourceQuantity(name, text));
    out.Set(name, value);
  }
  return out;
}

}  // namespace lockstep::scheduler
