#pragma once
// Reflector: keeps a sink in step with one resource collection by LIST (paginated) then WATCH
// (with bookmarks), resuming from the last resourceVersion seen after any interruption, and
// re-listing when that version has left the server's history (410 Gone). A watch that delivers
// no byte for `idle_timeout` is treated as dead and restarted; watches also carry a random
// server-side timeout in [5, 10] minutes to spread reconnects, as client-go does.
//
// Runs on its own thread between Start() and Stop(). Sink calls come from that thread only.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/rest_client.h"

namespace lockstep::kube {

class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A full list is about to be delivered item by item; EndReplace(true) commits it (objects not
  // delivered are gone), EndReplace(false) abandons it (the list failed part-way).
  virtual void BeginReplace() = 0;
  virtual void ReplaceItem(nlohmann::json&& object) = 0;
  virtual void EndReplace(bool complete) = 0;
  // A watch event (never kBookmark or kError).
  virtual void OnEvent(WatchEventType type, nlohmann::json&& object) = 0;
};

struct ReflectorOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  std::chrono::seconds idle_timeout{std::chrono::seconds(90)};
  int min_watch_timeout_seconds = 300;
  BackoffPolicy backoff{std::chrono::milliseconds(800), std::chrono::seconds(30), 2.0, 1.0};
};

class Reflector {
 public:
  Reflector(RestClient& client, ResourceRef ref, std::string ns, ReflectorSink* sink,
            ReflectorOptions options = {});
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start();
  // Cancels the watch and joins the thread. Idempotent.
  // Asks the watch to end without waiting for it: an idle watch notices within about a second
  // (libcurl's progress tick), so stopping many reflectors one Stop() after another costs a
  // second each; RequestStop() them all first, then Stop() joins them in parallel time.
  void RequestStop();
  void Stop();

  std::string LastResourceVersion() const;
  // Since when the sink's view is continuous, on the wall clock: the epoch while no list or
  // watch has failed; after a failure (the apiserver restarting, a partition), time_point::max()
  // until a list, event or bookmark succeeds again, then that moment. A cache whose view broke
  // off cannot tell an object that went quiet from one it did not hear about: the node health
  // monitor counts Lease ages from here (an apiserver restart once expired every Lease).
  std::chrono::system_clock::time_point FreshSince() const;
  // Counters for tests and logs.
  int64_t lists() const { return lists_.load(); }
  int64_t watches() const { return watches_.load(); }

 private:
  void Run();
  Status ListAndReplace();
  // A list that took kSlowList or longer is logged (a warning) with its resource and size.
  static constexpr std::chrono::seconds kSlowList{2};
  void LogIfSlow(std::chrono::steady_clock::time_point started, int64_t items,
                 const Status& result) const;
  Status WatchOnce(bool* made_progress);
  // Sleeps unless stopped first; returns false when stopped.
  bool SleepFor(std::chrono::milliseconds d);

  RestClient& client_;
  const ResourceRef ref_;
  const std::string ns_;
  ReflectorSink* const sink_;
  const ReflectorOptions options_;
  Backoff backoff_;

  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string last_rv_;  // guarded by mu_
  std::thread thread_;
  void MarkBroken();
  void MarkFresh();

  // FreshSince() in system_clock ticks; 0: never broken; max: broken now.
  std::atomic<int64_t> fresh_since_{0};
  std::atomic<int64_t> lists_{0};
  std::atomic<int64_t> watches_{0};
};

}  // namespace lockstep::kube
