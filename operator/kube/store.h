#pragma once
// Store<T>: the thread-safe cache behind an informer, keyed by "namespace/name" (T::meta.Key()),
// holding immutable shared_ptr<const T> so readers never copy objects and never see one change
// under them (callers must not mutate the shared objects: copy, then write to the API). Indexers
// map an object to index values (e.g. pods by node name) maintained on every mutation.
//
// Readers: Get/List/ByIndex/Keys from any thread. Writers: the owning informer only.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/check.h"

namespace lockstep::kube {

template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  // Registers an index; only before the first mutation.
  void AddIndexer(const std::string& name, IndexFunc fn) {
    std::unique_lock lock(mu_);
    LS_CHECK(items_.empty());
    indexers_.emplace(name, std::move(fn));
    indices_[name];
  }

  Ptr Get(const std::string& key) const {
    std::shared_lock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }

  std::vector<Ptr> List() const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(obj);
    return out;
  }

  std::vector<std::string> Keys() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(key);
    return out;
  }

  // Objects whose index `index` contains `value`. LS_CHECKs that the index exists.
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    std::shared_lock lock(mu_);
    auto idx = indices_.find(index);
    LS_CHECK(idx != indices_.end());
    std::vector<Ptr> out;
    auto it = idx->second.find(value);
    if (it == idx->second.end()) return out;
    out.reserve(it->second.size());
    for (const auto& key : it->second) out.push_back(items_.at(key));
    return out;
  }

  size_t Size() const {
    std::shared_lock lock(mu_);
    return items_.size();
  }

  // Inserts or replaces; returns the previous object (null if none).
  Ptr Upsert(const std::string& key, Ptr obj) {
    std::unique_lock lock(mu_);
    Ptr old;
    if (auto it = items_.find(key); it != items_.end()) {
      old = std::move(it->second);
      Unindex(key, *old);
      it->second = obj;
    } else {
      items_.emplace(key, obj);
    }
    Index(key, *obj);
    return old;
  }

  // Removes; returns the removed object (null if absent).
  Ptr Remove(const std::string& key) {
    std::unique_lock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = std::move(it->second);
    items_.erase(it);
    Unindex(key, *old);
    return old;
  }

 private:
  void Index(const std::string& key, const T& obj) {
    for (const auto& [name, fn] : indexers_) {
      auto& index = indices_[name];
      for (auto& value : fn(obj)) index[std::move(value)].insert(key);
    }
  }

  void Unindex(const std::string& key, const T& obj) {
    for (const auto& [name, fn] : indexers_) {
      auto& index = indices_[name];
      for (const auto& value : fn(obj)) {
        auto it = index.find(value);
        if (it == index.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) index.erase(it);
      }
    }
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Ptr> items_;  // guarded by mu_
  std::map<std::string, IndexFunc> indexers_;   // guarded by mu_
  std::map<std::string, std::unordered_map<std::string, std::unordered_set<std::string>>>
      indices_;  // guarded by mu_
};

}  // namespace lockstep::kube
