#pragma once
// Informer<T>: a Reflector feeding a Store<T> of compact objects decoded by a per-kind function
// (objects.h), plus event handlers and a HasSynced gate.
//
// Handlers run on the reflector's thread, in event order, outside the store lock; keep them
// short (enqueue a key). On a re-list the store is reconciled with the new list: objects that
// disappeared produce OnDelete with `tombstone = true` (their final state was missed), changed
// ones OnUpdate, new ones OnAdd, unchanged ones nothing, so consumers see the final state
// exactly once.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "operator/kube/decode_pool.h"
#include "operator/kube/reflector.h"
#include "operator/kube/store.h"

namespace lockstep::kube {

// A decoder's answer for an object it cannot decode *yet*, by design: it waits for a field that
// another writer adds (a TrainingJob naming a template, before the job controller has written
// the template's snapshot into its status). The informer leaves such an object out of its cache
// as it does one it cannot decode, but logs it at Debug: it is expected, and it would otherwise
// log at Error on every re-list and update until the field exists. Decoders return
// FailedPrecondition only through this.
inline Status NotYetDecodable(std::string why) { return FailedPreconditionError(std::move(why)); }
inline bool IsNotYetDecodable(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition;
}
// The level an informer logs a decode error at.
inline log::Level DecodeErrorLevel(const Status& s) {
  return IsNotYetDecodable(s) ? log::Level::kDebug : log::Level::kError;
}

template <typename T>
struct EventHandlers {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr& obj)> on_add;
  std::function<void(const Ptr& old_obj, const Ptr& new_obj)> on_update;
  std::function<void(const Ptr& last_known, bool tombstone)> on_delete;
};

// The type-independent face of an informer, so a manager can start, stop and wait for many.
class InformerBase {
 public:
  virtual ~InformerBase() = default;
  virtual void Start() = 0;
  virtual void RequestStop() = 0;  // does not wait (see Reflector::RequestStop)
  virtual void Stop() = 0;
  virtual bool HasSynced() const = 0;
  virtual bool WaitForSync(std::chrono::milliseconds timeout) const = 0;
  // The resource it caches ("pods"), for messages that say which cache is not synced.
  virtual const std::string& resource() const = 0;
};

// Stops several informers in about the time of one: every watch is asked to end before any is
// waited for.
inline void StopAll(std::initializer_list<InformerBase*> informers) {
  for (InformerBase* informer : informers) informer->RequestStop();
  for (InformerBase* informer : informers) informer->Stop();
}

// Appends to `*out` "<prefix><resource>" of each informer whose first list has not ended,
// comma-separated after what `*out` already holds: what a not-ready message names.
template <typename Informers>
void AppendUnsynced(const Informers& informers, std::string_view prefix, std::string* out) {
  for (const InformerBase* informer : informers) {
    if (informer->HasSynced()) continue;
    if (!out->empty()) *out += ", ";
    *out += prefix;
    *out += informer->resource();
  }
}
inline std::string Unsynced(std::initializer_list<const InformerBase*> informers) {
  std::string out;
  AppendUnsynced(informers, "", &out);
  return out;
}

// Waits for the first list of every informer under one deadline, `timeout` from now on `clock`:
// true once all have synced, false at the first one that has not by the deadline. Each waits
// for what is left of the deadline; once it has passed, the rest are still asked (a wait of
// zero), so informers that have all synced answer true however late they are asked.
template <typename Informers>
bool WaitForSyncAll(const Informers& informers, std::chrono::milliseconds timeout,
                    const Clock& clock) {
  const Clock::Steady deadline = clock.Now() + timeout;
  for (const InformerBase* informer : informers) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
    if (!informer->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}
inline bool WaitForSyncAll(std::initializer_list<const InformerBase*> informers,
                           std::chrono::milliseconds timeout, const Clock& clock) {
  return WaitForSyncAll<std::initializer_list<const InformerBase*>>(informers, timeout, clock);
}

template <typename T>
class Informer final : public InformerBase, private ReflectorSink {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Decoder = std::function<StatusOr<T>(const nlohmann::json&)>;

  Informer(RestClient& client, ResourceRef ref, std::string ns, Decoder decode,
           ReflectorOptions options = {})
      : resource_(ref.resource),
        decode_(std::move(decode)),
        reflector_(client, std::move(ref), std::move(ns), this, std::move(options)) {}
  ~Informer() override { Stop(); }

  Store<T>& store() { return store_; }
  const Store<T>& store() const { return store_; }
  Reflector& reflector() { return reflector_; }

  // Before Start().
  void AddIndexer(const std::string& name, typename Store<T>::IndexFunc fn) {
    store_.AddIndexer(name, std::move(fn));
  }
  // Before Start(): decode through `pool`, sharing each object version with the pool's other
  // informers (decode_pool.h); the pool's decoder replaces this informer's. Null: no change.
  void UseDecodePool(std::shared_ptr<DecodePool<T>> pool) {
    LS_CHECK(!started_);
    pool_ = std::move(pool);
  }
  void AddEventHandler(EventHandlers<T> handlers) {
    LS_CHECK(!started_);
    handlers_.push_back(std::move(handlers));
  }

  void Start() override {
    started_ = true;
    reflector_.Start();
  }
  void RequestStop() override { reflector_.RequestStop(); }
  void Stop() override { reflector_.Stop(); }

  // True once the first complete list has been stored.
  bool HasSynced() const override {
    std::lock_guard<std::mutex> lock(sync_mu_);
    return synced_;
  }
  bool WaitForSync(std::chrono::milliseconds timeout) const override {
    std::unique_lock<std::mutex> lock(sync_mu_);
    return sync_cv_.wait_for(lock, timeout, [this] { return synced_; });
  }
  const std::string& resource() const override { return resource_; }

 private:
  // `current`: the object is its version's content (a list item, an ADDED or MODIFIED event),
  // so it may be shared through the pool; a DELETED event's object may not be (decode_pool.h).
  StatusOr<Ptr> Decode(const nlohmann::json& object, bool current = true) {
    if (pool_ != nullptr && current) return pool_->Decode(object);
    StatusOr<T> decoded = decode_(object);
    if (!decoded.ok()) return decoded.status();
    return Ptr(std::make_shared<const T>(std::move(decoded).value()));
  }

  void BeginReplace() override { pending_.clear(); }

  void ReplaceItem(nlohmann::json&& object) override {
    StatusOr<Ptr> obj = Decode(object);
    if (!obj.ok()) {
      log::Write(DecodeErrorLevel(obj.status()), "cannot decode object",
                 {{"resource", resource_}, {"error", obj.status().ToString()}});
      return;
    }
    pending_.emplace((*obj)->meta.Key(), std::move(obj).value());
  }

  void EndReplace(bool complete) override {
    if (!complete) {
      pending_.clear();
      return;
    }
    for (const auto& key : store_.Keys()) {
      if (pending_.count(key) != 0) continue;
      if (Ptr old = store_.Remove(key)) Notify(nullptr, old, /*tombstone=*/true);
    }
    for (auto& [key, obj] : pending_) {
      Ptr current = store_.Get(key);
      if (current && current->meta.resource_version == obj->meta.resource_version) continue;
      store_.Upsert(key, obj);
      Notify(obj, current, false);
    }
    pending_.clear();
    {
      std::lock_guard<std::mutex> lock(sync_mu_);
      synced_ = true;
    }
    sync_cv_.notify_all();
  }

  void OnEvent(WatchEventType type, nlohmann::json&& object) override {
    StatusOr<Ptr> obj = Decode(object, type != WatchEventType::kDeleted);
    if (!obj.ok()) {
      log::Write(DecodeErrorLevel(obj.status()), "cannot decode watch object",
                 {{"resource", resource_}, {"error", obj.status().ToString()}});
      return;
    }
    const std::string key = (*obj)->meta.Key();
    if (type == WatchEventType::kDeleted) {
      // Consumers never saw an object that is not cached, so its delete is not news.
      if (Ptr old = store_.Remove(key)) Notify(nullptr, *obj, false);
      return;
    }
    Ptr old = store_.Upsert(key, *obj);
    Notify(*obj, old, false);
  }

  // now == null: a delete of `old`; old == null: an add of `now`; else an update.
  void Notify(const Ptr& now, const Ptr& old, bool tombstone) {
    for (const auto& h : handlers_) {
      if (now == nullptr) {
        if (h.on_delete) h.on_delete(old, tombstone);
      } else if (old == nullptr) {
        if (h.on_add) h.on_add(now);
      } else if (h.on_update) {
        h.on_update(old, now);
      }
    }
  }

  const std::string resource_;
  Decoder decode_;
  std::shared_ptr<DecodePool<T>> pool_;  // null: decode_ alone
  Store<T> store_;
  std::vector<EventHandlers<T>> handlers_;
  bool started_ = false;
  std::unordered_map<std::string, Ptr> pending_;  // reflector thread only
  mutable std::mutex sync_mu_;
  mutable std::condition_variable sync_cv_;
  bool synced_ = false;  // guarded by sync_mu_
  Reflector reflector_;  // last: its thread uses the members above
};

}  // namespace lockstep::kube
