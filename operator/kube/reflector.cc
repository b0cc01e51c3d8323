#include "operator/kube/reflector.h"

#include <cstdio>
#include <limits>
#include <random>

#include "common/check.h"
#include "common/log.h"

namespace lockstep::kube {

Reflector::Reflector(RestClient& client, ResourceRef ref, std::string ns, ReflectorSink* sink,
                     ReflectorOptions options)
    : client_(client),
      ref_(std::move(ref)),
      ns_(std::move(ns)),
      sink_(sink),
      options_(std::move(options)),
      backoff_(options_.backoff) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  LS_CHECK(!thread_.joinable());
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Reflector::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void Reflector::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

std::string Reflector::LastResourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rv_;
}

std::chrono::system_clock::time_point Reflector::FreshSince() const {
  return std::chrono::system_clock::time_point(
      std::chrono::system_clock::duration(fresh_since_.load()));
}

void Reflector::MarkBroken() { fresh_since_ = std::numeric_limits<int64_t>::max(); }

void Reflector::MarkFresh() {
  if (fresh_since_.load() != std::numeric_limits<int64_t>::max()) return;
  fresh_since_ = client_.clock().WallNow().time_since_epoch().count();
}

bool Reflector::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_.load(); });
}

void Reflector::Run() {
  // After Stop()/Start() the watch resumes from where it stopped; the server answers 410 if
  // that version is gone, which leads to a re-list below.
  bool need_list = LastResourceVersion().empty();
  int failures = 0;
  while (!stop_) {
    if (need_list) {
      Status s = ListAndReplace();
      if (!s.ok()) {
        MarkBroken();
        log::Warning("list failed", {{"resource", ref_.resource}, {"error", s.ToString()}});
        if (!SleepFor(backoff_.Delay(failures++))) return;
        continue;
      }
      need_list = false;
      failures = 0;
    }
    bool made_progress = false;
    Status s = WatchOnce(&made_progress);
    if (stop_) return;
    if (made_progress) failures = 0;
    if (IsGone(s)) {
      // Our resourceVersion left the server's history: only a fresh list is exact.
      log::Info("watch expired, re-listing", {{"resource", ref_.resource}});
      need_list = true;
      continue;
    }
    // The server ended the watch (its timeout): resume at once, unless it ended without
    // delivering anything, which repeated in a loop would hammer a misbehaving server.
    if (s.ok() && made_progress) continue;
    if (s.ok()) {
      if (!SleepFor(backoff_.Delay(0))) return;
      continue;
    }
    MarkBroken();
    log::Warning("watch failed", {{"resource", ref_.resource}, {"error", s.ToString()}});
    if (!SleepFor(backoff_.Delay(failures++))) return;
  }
}

// A cache is not synced, and the operator not ready, until its first list ends: a list that
// takes seconds is named, so a start-up that waits on one says which (CI: a scheduler cache
// unsynced for 34 s, with nothing in the log to say which list held it). A request the client
// retried (429, 5xx, a reset) is counted in the time, not named (those retries log at debug).
void Reflector::LogIfSlow(std::chrono::steady_clock::time_point started, int64_t items,
                          const Status& result) const {
  const std::chrono::duration<double> took = client_.clock().Now() - started;
  if (took < kSlowList) return;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f", took.count());
  log::Warning("slow list", {{"resource", ref_.resource},
                             {"namespace", ns_.empty() ? "(all)" : ns_},
                             {"seconds", seconds},
                             {"items", std::to_string(items)},
                             {"result", result.ok() ? "ok" : result.ToString()}});
}

Status Reflector::ListAndReplace() {
  ++lists_;
  ListOptions options;
  options.label_selector = options_.label_selector;
  options.field_selector = options_.field_selector;
  options.limit = options_.page_size;
  sink_->BeginReplace();
  std::string rv;
  int64_t items = 0;
  const auto started = client_.clock().Now();
  Status s = client_.ListEach(
      ref_, ns_, options,
      [this, &items](nlohmann::json&& item) {
        if (stop_) return CancelledError("stopping");
        sink_->ReplaceItem(std::move(item));
        ++items;
        return Status::Ok();
      },
      &rv);
  sink_->EndReplace(s.ok());
  LogIfSlow(started, items, s);
  if (!s.ok()) return s;
  MarkFresh();
  std::lock_guard<std::mutex> lock(mu_);
  last_rv_ = rv;
  return Status::Ok();
}

Status Reflector::WatchOnce(bool* made_progress) {
  ++watches_;
  static thread_local std::mt19937 rng{std::random_device{}()};
  WatchOptions options;
  options.label_selector = options_.label_selector;
  options.field_selector = options_.field_selector;
  options.resource_version = LastResourceVersion();
  options.allow_bookmarks = true;
  options.timeout_seconds = std::uniform_int_distribution<int>(
      options_.min_watch_timeout_seconds, 2 * options_.min_watch_timeout_seconds)(rng);
  options.idle_timeout = options_.idle_timeout;
  options.cancel = &stop_;
  Status event_error;
  Status s = client_.Watch(ref_, ns_, options, [&](WatchEvent&& event) {
    if (event.type == WatchEventType::kError) {
      event_error = ApiErrorFromStatusJson(event.object.dump()).ToStatus();
      return false;
    }
    *made_progress = true;
    MarkFresh();
    std::string rv;
    if (auto m = event.object.find("metadata"); m != event.object.end() && m->is_object()) {
      rv = m->value("resourceVersion", "");
    }
    if (event.type != WatchEventType::kBookmark) sink_->OnEvent(event.type, std::move(event.object));
    if (!rv.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      last_rv_ = rv;
    }
    return true;
  });
  if (!event_error.ok()) return event_error;
  return s;
}

}  // namespace lockstep::kube
