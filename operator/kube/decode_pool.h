#pragma once
// DecodePool<T>: one decoded copy of an object version for every informer of the process that
// caches it. The controller and the gang scheduler each watch the pods of the jobs (their
// selectors differ, their objects do not), and the node monitor and the scheduler each watch
// every Node; without a pool each pod and node was decoded and held twice (bench/RESULTS.md,
// the heap profile: 4,000 pods and 1,000 nodes, twice, a third of the operator's heap).
//
// An informer given a pool (Informer::UseDecodePool) decodes through it: the first informer to
// see a version (uid and resourceVersion) decodes it, the others get the same shared_ptr for as
// long as anyone still holds it. A version is immutable in the API and the objects are immutable
// in the caches, so sharing changes nothing a reader can see. Objects without a uid or a
// resourceVersion (never the API server's) are decoded privately.
//
// Only an object that is its version's content may be decoded through a pool: a list item, the
// object of an ADDED or MODIFIED event. A DELETED event's may not: when an update makes an object
// stop matching a watch's selector (the scheduler's non-terminal pods, a pod that succeeded),
// the API server's watch cache sends DELETED with the object's *previous* content under the
// update's resourceVersion. Pooled, that stale pod stood for the new version in the controller's
// cache, and jobs whose pods had all succeeded stayed Running (CI, 2026-12-04).
//
// Memory: one entry (a hash and a weak_ptr, about 50 bytes) per version decoded; expired entries
// are swept when the table has doubled since the last sweep, so it stays within about twice the
// versions alive. The objects are allocated apart from their control blocks, so an expired
// entry holds the control block only, never the object.
//
// Thread safety: Decode may be called from any thread (each informer's reflector thread); the
// decoding itself runs outside the lock. Two threads decoding the same version at once both
// decode, and the second returns the first's pointer.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/status.h"

namespace lockstep::kube {

template <typename T>
class DecodePool {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Decoder = std::function<StatusOr<T>(const nlohmann::json&)>;

  // Every informer of the pool decodes with `decode` (its own decoder is not used).
  explicit DecodePool(Decoder decode) : decode_(std::move(decode)) {}
  DecodePool(const DecodePool&) = delete;
  DecodePool& operator=(const DecodePool&) = delete;

  // The object decoded, or the pointer another informer got for the same version.
  StatusOr<Ptr> Decode(const nlohmann::json& object) {
    const std::string* uid = nullptr;
    const std::string* version = nullptr;
    Identity(object, &uid, &version);
    if (uid == nullptr || version == nullptr) return DecodeNew(object);
    const uint64_t key = Key(*uid, *version);
    if (Ptr shared = Find(key, *uid, *version)) return shared;
    StatusOr<Ptr> decoded = DecodeNew(object);
    if (!decoded.ok()) return decoded;
    return Insert(key, std::move(decoded).value());
  }

  // Entries in the table, alive or expired but not swept yet (tests; the memory bound).
  size_t entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  static constexpr size_t kMinSweep = 1024;

  static void Identity(const nlohmann::json& object, const std::string** uid,
                       const std::string** version) {
    if (!object.is_object()) return;
    auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return;
    auto u = meta->find("uid");
    auto v = meta->find("resourceVersion");
    if (u == meta->end() || !u->is_string() || v == meta->end() || !v->is_string()) return;
    *uid = &u->template get_ref<const std::string&>();
    *version = &v->template get_ref<const std::string&>();
    if ((*uid)->empty() || (*version)->empty()) *uid = *version = nullptr;
  }

  // A hash collision only costs sharing: a hit is checked against the object's own fields.
  static uint64_t Key(const std::string& uid, const std::string& version) {
    const uint64_t a = std::hash<std::string>{}(uid);
    const uint64_t b = std::hash<std::string>{}(version);
    return a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  }

  static bool Same(const T& object, const std::string& uid, const std::string& version) {
    return object.meta.uid == uid && object.meta.resource_version == version;
  }

  StatusOr<Ptr> DecodeNew(const nlohmann::json& object) {
    StatusOr<T> decoded = decode_(object);
    if (!decoded.ok()) return decoded.status();
    // Not make_shared: the table's weak_ptr would keep the whole object's memory alive.
    return Ptr(new T(std::move(decoded).value()));
  }

  Ptr Find(uint64_t key, const std::string& uid, const std::string& version) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    Ptr alive = it->second.lock();
    return alive != nullptr && Same(*alive, uid, version) ? alive : nullptr;
  }

  Ptr Insert(uint64_t key, Ptr decoded) {
    std::lock_guard<std::mutex> lock(mu_);
    std::weak_ptr<const T>& entry = entries_[key];
    if (Ptr alive = entry.lock();
        alive != nullptr && Same(*alive, decoded->meta.uid, decoded->meta.resource_version)) {
      return alive;  // another informer decoded it meanwhile
    }
    entry = decoded;
    if (entries_.size() >= sweep_at_) Sweep();
    return decoded;
  }

  void Sweep() {  // mu_ held
    std::erase_if(entries_, [](const auto& e) { return e.second.expired(); });
    sweep_at_ = std::max(kMinSweep, 2 * entries_.size());
  }

  const Decoder decode_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::weak_ptr<const T>> entries_;  // guarded by mu_
  size_t sweep_at_ = kMinSweep;                                   // guarded by mu_
};

}  // namespace lockstep::kube
