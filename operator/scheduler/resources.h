#pragma once
// Resources: a small map of resource name -> amount in canonical units (cpu in millicores,
// memory in bytes, nvidia.com/gpu and other extended resources as counts). Kept as a sorted
// vector because a pod or node names a handful of resources. Value type, thread-compatible.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace lockstep::scheduler {

inline constexpr std::string_view kCpu = "cpu";
inline constexpr std::string_view kMemory = "memory";
inline constexpr std::string_view kGpu = "nvidia.com/gpu";
// Nodes advertise how many pods they accept; every pod consumes one.
inline constexpr std::string_view kPods = "pods";

class Resources {
 public:
  using Entry = std::pair<std::string, int64_t>;

  Resources() = default;
  Resources(std::initializer_list<Entry> entries);

  // 0 when absent.
  int64_t Get(std::string_view name) const;
  // Sets the amount; 0 removes the entry so equal maps compare equal.
  void Set(std::string_view name, int64_t value);
  void Add(std::string_view name, int64_t delta) { Set(name, Get(name) + delta); }
  Resources& operator+=(const Resources& other);

  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  friend bool operator==(const Resources&, const Resources&) = default;

  // "cpu=500m, memory=2Gi, nvidia.com/gpu=8".
  std::string ToString() const;

 private:
  std::vector<Entry> entries_;  // sorted by name, no zero values
};

// Parses a Kubernetes ResourceList ({"cpu": "500m", "memory": "2Gi"}) into canonical units.
StatusOr<Resources> ParseResourceList(const std::map<std::string, std::string>& list);

}  // namespace lockstep::scheduler
