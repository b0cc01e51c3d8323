#pragma once
// EventRecorder: writes core/v1 Events about objects (what `kubectl describe` shows), client-go's
// tools/record. The one Event writer: the controller's reconciles and the gang scheduler's
// Scheduled changes and undone binds each record through one (their `component` differs). Record()
// never blocks its caller: events go to a bounded queue drained by one thread that paces its
// writes with a token bucket; when the queue is full the event is dropped and logged, since an
// event is a courtesy to humans and never state the operator depends on. Thread-safe.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/rest_client.h"

namespace lockstep::kube {

struct InvolvedObject {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
};

struct EventRecorderOptions {
  std::string component = "lockstep-operator";
  std::string instance;  // reportingInstance, e.g. the pod name
  double qps = 10;
  int burst = 50;
  size_t max_queued = 1000;
};

class EventRecorder {
 public:
  EventRecorder(RestClient& client, EventRecorderOptions options,
                const Clock& clock = RealClock::Get());
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // `type` is "Normal" or "Warning".
  void Record(const InvolvedObject& object, const std::string& type, const std::string& reason,
              const std::string& message);
  // Waits until the queue is empty or `timeout` passes (shutdown and tests).
  bool Flush(std::chrono::milliseconds timeout);

  int64_t dropped() const;

 private:
  struct Pending {
    InvolvedObject object;
    std::string type;
    std::string reason;
    std::string message;
    std::chrono::system_clock::time_point at;
  };
  void Run();
  void Write(const Pending& e);

  RestClient& client_;
  const EventRecorderOptions options_;
  const Clock& clock_;
  TokenBucket bucket_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool writing_ = false;       // guarded by mu_
  bool stop_ = false;          // guarded by mu_
  int64_t dropped_ = 0;        // guarded by mu_
  uint64_t sequence_ = 0;      // guarded by mu_
  std::thread thread_;
};

// Builds the core/v1 Event object (exposed for tests). `name_suffix` makes the name unique.
nlohmann::json BuildEvent(const InvolvedObject& object, const std::string& type,
                          const std::string& reason, const std::string& message,
                          std::chrono::system_clock::time_point at,
                          const EventRecorderOptions& options, const std::string& name_suffix);

}  // namespace lockstep::kube
