#include "operator/kube/event_recorder.h"

#include <cstdio>

#include "common/log.h"
#include "common/rfc3339.h"
#include "operator/kube/api_error.h"

namespace lockstep::kube {

namespace {
constexpr size_t kMaxMessageBytes = 1024;  // the apiserver rejects event messages over 1 KiB
}  // namespace

nlohmann::json BuildEvent(const InvolvedObject& object, const std::string& type,
                          const std::string& reason, const std::string& message,
                          std::chrono::system_clock::time_point at,
                          const EventRecorderOptions& options, const std::string& name_suffix) {
  const std::string stamp = FormatTime(at);
  return {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", object.name + "." + name_suffix}, {"namespace", object.namespace_}}},
      {"involvedObject",
       {{"apiVersion", object.api_version},
        {"kind", object.kind},
        {"namespace", object.namespace_},
        {"name", object.name},
        {"uid", object.uid},
        {"resourceVersion", object.resource_version}}},
      {"type", type},
      {"reason", reason},
      {"message", message.substr(0, kMaxMessageBytes)},
      {"source", {{"component", options.component}}},
      {"reportingComponent", options.component},
      {"reportingInstance", options.instance},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"count", 1}};
}

EventRecorder::EventRecorder(RestClient& client, EventRecorderOptions options,
                             const Clock& clock)
    : client_(client),
      options_(std::move(options)),
      clock_(clock),
      bucket_(options_.qps, options_.burst, clock),
      thread_([this] { Run(); }) {}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::Record(const InvolvedObject& object, const std::string& type,
                           const std::string& reason, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    if (queue_.size() >= options_.max_queued) {
      ++dropped_;
      log::Warning("event dropped: queue full",
                   {{"object", object.namespace_ + "/" + object.name}, {"reason", reason}});
      return;
    }
    queue_.push_back({object, type, reason, message, clock_.WallNow()});
  }
  cv_.notify_one();
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [this] { return queue_.empty() && !writing_; });
}

int64_t EventRecorder::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void EventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Pending e = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    bucket_.Wait();
    Write(e);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void EventRecorder::Write(const Pending& e) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = ++sequence_;
  }
  // Unique per recorder: wall time in ns (like client-go's %x of UnixNano) plus a sequence.
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), "%llx%llx",
                static_cast<unsigned long long>(e.at.time_since_epoch().count()),
                static_cast<unsigned long long>(seq));
  const nlohmann::json event =
      BuildEvent(e.object, e.type, e.reason, e.message, e.at, options_, suffix);
  StatusOr<nlohmann::json> created =
      client_.Create(resources::Events(), e.object.namespace_, event);
  if (!created.ok() && IsNamespaceTerminating(created.status())) {
    log::Info("event dropped: namespace being deleted",
               {{"object", e.object.namespace_ + "/" + e.object.name}, {"reason", e.reason}});
  } else if (!created.ok()) {
    log::Warning("cannot write event", {{"object", e.object.namespace_ + "/" + e.object.name},
                                        {"reason", e.reason},
                                        {"error", created.status().ToString()}});
  }
}

}  // namespace lockstep::kube
