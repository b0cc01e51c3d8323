#include "operator/scheduler/snapshot.h"

#include <algorithm>
#include <set>

namespace lockstep::scheduler {
namespace {

// A node that does not report "pods" capacity is not limited by pod count.
constexpr int64_t kUnlimitedPods = int64_t{1} << 40;

std::vector<std::string> CollectResourceNames(const std::vector<NodeInfo>& nodes) {
  std::set<std::string> names;
  for (const NodeInfo& node : nodes) {
    for (const auto& [name, value] : node.allocatable.entries()) names.insert(name);
    for (const auto& [name, value] : node.requested.entries()) names.insert(name);
  }
  names.insert(std::string(kPods));
  return {names.begin(), names.end()};
}

DomainIndex IndexDomains(const std::vector<NodeInfo>& nodes, std::string_view key) {
  DomainIndex index;
  index.key = std::string(key);
  std::set<std::string> values;
  for (const NodeInfo& node : nodes) {
    auto it = node.labels.find(index.key);
    if (it != node.labels.end()) values.insert(it->second);
  }
  index.values.assign(values.begin(), values.end());
  index.of_node.reserve(nodes.size());
  for (const NodeInfo& node : nodes) {
    auto it = node.labels.find(index.key);
    if (it == node.labels.end()) {
      index.of_node.push_back(DomainIndex::kUnlabeled);
      continue;
    }
    auto pos = std::lower_bound(index.values.begin(), index.values.end(), it->second);
    index.of_node.push_back(static_cast<int32_t>(pos - index.values.begin()));
  }
  return index;
}

}  // namespace

Snapshot Snapshot::Build(std::vector<NodeInfo> nodes,
                         const std::vector<std::string>& topology_keys) {
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const NodeInfo& a, const NodeInfo& b) { return a.name < b.name; });
  nodes.erase(std::unique(nodes.begin(), nodes.end(),
                          [](const NodeInfo& a, const NodeInfo& b) { return a.name == b.name; }),
              nodes.end());
  auto model = std::make_shared<Model>();
  model->resource_names = CollectResourceNames(nodes);
  const size_t r_count = model->resource_names.size();
  for (ResourceId r = 0; r < r_count; ++r) {
    if (model->resource_names[r] == kPods) model->pods_resource = r;
  }
  Snapshot snap;
  model->allocatable.assign(nodes.size() * r_count, 0);
  snap.requested_.assign(nodes.size() * r_count, 0);
  for (NodeIndex n = 0; n < nodes.size(); ++n) {
    model->by_name.emplace(nodes[n].name, n);
    for (ResourceId r = 0; r < r_count; ++r) {
      const std::string& name = model->resource_names[r];
      int64_t alloc = nodes[n].allocatable.Get(name);
      if (r == model->pods_resource && alloc == 0) alloc = kUnlimitedPods;
      model->allocatable[n * r_count + r] = alloc;
      snap.requested_[n * r_count + r] = nodes[n].requested.Get(name);
    }
  }
  for (const std::string& key : topology_keys) {
    if (!key.empty()) model->domains.emplace(key, IndexDomains(nodes, key));
  }
  for (const NodeInfo& node : nodes) {
    for (const BoundPod& pod : node.pods) {
      snap.any_anti_affinity_ = snap.any_anti_affinity_ || !pod.anti_affinity.empty();
    }
  }
  model->nodes = std::move(nodes);
  snap.model_ = std::move(model);
  return snap;
}

std::optional<NodeIndex> Snapshot::Find(std::string_view name) const {
  auto it = model_->by_name.find(name);
  if (it == model_->by_name.end()) return std::nullopt;
  return it->second;
}

std::optional<ResourceId> Snapshot::FindResource(std::string_view name) const {
  const auto& names = model_->resource_names;
  auto it = std::lower_bound(names.begin(), names.end(), name);
  if (it == names.end() || *it != name) return std::nullopt;
  return static_cast<ResourceId>(it - names.begin());
}

Resources Snapshot::Requested(NodeIndex n) const {
  Resources out;
  for (ResourceId r = 0; r < resource_count(); ++r)
    out.Set(resource_name(r), RequestedAmount(n, r));
  return out;
}

const DomainIndex* Snapshot::Domains(std::string_view key) const {
  auto it = model_->domains.find(key);
  return it == model_->domains.end() ? nullptr : &it->second;
}

DomainIndex Snapshot::BuildDomainIndex(std::string_view key) const {
  return IndexDomains(model_->nodes, key);
}

void Snapshot::Assume(NodeIndex n, const Resources& requests) {
  for (const auto& [name, value] : requests.entries()) {
    if (auto r = FindResource(name)) requested_[At(n, *r)] += value;
  }
  if (model_->pods_resource && requests.Get(kPods) == 0) {
    requested_[At(n, *model_->pods_resource)] += 1;
  }
}

void Snapshot::Release(NodeIndex n, const Resources& requests) {
  auto take = [this](size_t at, int64_t value) {
    requested_[at] = std::max<int64_t>(0, requested_[at] - value);
  };
  for (const auto& [name, value] : requests.entries()) {
    if (auto r = FindResource(name)) take(At(n, *r), value);
  }
  if (model_->pods_resource && requests.Get(kPods) == 0) take(At(n, *model_->pods_resource), 1);
}

}  // namespace lockstep::scheduler
