#pragma once
// A generic REST client for the Kubernetes API: every verb the operator uses, over any resource
// named by a ResourceRef, with bodies as nlohmann::json. Requests pass a client-side token bucket
// and are retried with capped exponential backoff and jitter on 429 (honouring Retry-After), 5xx
// and connection errors. Other 4xx responses are returned at once as typed errors (api_error.h).
//
// Retry policy for the non-idempotent POST (create, binding): retried only on 429 (the server
// rejected it before doing anything) and on connection errors raised before the request was
// sent; a 5xx or a connection broken mid-request is returned to the caller, whose level-triggered
// reconcile re-observes and decides (a blind retry could create twice or report a spurious
// AlreadyExists).
//
// Thread-safe; share one RestClient per process.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/status.h"
#include "operator/kube/api_error.h"
#include "operator/kube/metrics.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/transport.h"

namespace lockstep::kube {

// Names a resource collection: group ("" for core), version, plural resource name.
struct ResourceRef {
  std::string group;
  std::string version;
  std::string resource;
  bool namespaced = true;

  // "/api/v1" or "/apis/<group>/<version>".
  std::string ApiPrefix() const;
  // The collection path ("" namespace = all namespaces for a namespaced resource).
  std::string CollectionPath(const std::string& ns) const;
  std::string ObjectPath(const std::string& ns, const std::string& name,
                         const std::string& subresource = "") const;
};

namespace resources {
inline ResourceRef Pods() { return {"", "v1", "pods", true}; }
inline ResourceRef Nodes() { return {"", "v1", "nodes", false}; }
inline ResourceRef Services() { return {"", "v1", "services", true}; }
inline ResourceRef Secrets() { return {"", "v1", "secrets", true}; }
inline ResourceRef NetworkPolicies() {
  return {"networking.k8s.io", "v1", "networkpolicies", true};
}
inline ResourceRef EndpointSlices() {
  return {"discovery.k8s.io", "v1", "endpointslices", true};
}
inline ResourceRef ConfigMaps() { return {"", "v1", "configmaps", true}; }
inline ResourceRef Namespaces() { return {"", "v1", "namespaces", false}; }
inline ResourceRef ServiceAccounts() { return {"", "v1", "serviceaccounts", true}; }
inline ResourceRef Events() { return {"", "v1", "events", true}; }
inline ResourceRef Leases() { return {"coordination.k8s.io", "v1", "leases", true}; }
inline ResourceRef Deployments() { return {"apps", "v1", "deployments", true}; }
inline ResourceRef TrainingJobs() { return {"lockstep.dev", "v1alpha1", "trainingjobs", true}; }
}  // namespace resources

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;        // "" = most recent (quorum read)
  std::string resource_version_match;  // "", "Exact" or "NotOlderThan"
  int64_t limit = 500;                 // page size; 0 = no pagination
  std::string continue_token;
};

struct ListResult {
  nlohmann::json items;  // array
  std::string resource_version;
  std::string continue_token;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type;
  nlohmann::json object;  // for kError, a metav1.Status
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // server-side watch timeout; 0 = server default
  std::chrono::seconds idle_timeout{std::chrono::seconds(90)};
  const std::atomic<bool>* cancel = nullptr;
};

// Return false to end the watch.
using WatchHandler = std::function<bool(WatchEvent&& event)>;

struct DeleteOptions {
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::optional<int64_t> grace_period_seconds;  // 0 = force
};

struct RestOptions {
  double qps = 50;  // <= 0 disables client-side limiting (rely on API Priority and Fairness)
  int burst = 100;
  int max_retries = 5;
  BackoffPolicy backoff{std::chrono::milliseconds(200), std::chrono::seconds(10), 2.0, 0.5};
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::string field_manager = "lockstep";
  // When set, every request but a GET (creates, updates, patches, deletes, bindings) is sent only
  // while this returns true: checked before each attempt and again by the transport just before
  // the request is written (Request::fence); otherwise it fails with FAILED_PRECONDITION, unsent.
  // lockstep-operator passes LeaderElector::MayWrite, so a leader that lost its lease while it
  // was paused writes nothing when it wakes (docs/kube-client.md, "Fencing").
  std::function<bool()> write_fence;
};

class RestClient {
 public:
  // `metrics` may be null. The transport must outlive nothing: the client owns it.
  RestClient(std::shared_ptr<Transport> transport, RestOptions options = {},
             KubeMetrics* metrics = nullptr, const Clock& clock = RealClock::Get());

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, const std::string& ns,
                               const std::string& name, const std::string& subresource = "");
  // One page. Pass the returned continue_token back in `options` for the next one.
  StatusOr<ListResult> List(const ResourceRef& ref, const std::string& ns,
                            const ListOptions& options = {});
  // Every page, calling `on_item` per object as each page arrives (a page's DOM is dropped
  // before the next is fetched). Sets `*resource_version` to the list's version.
  Status ListEach(const ResourceRef& ref, const std::string& ns, const ListOptions& options,
                  const std::function<Status(nlohmann::json&& item)>& on_item,
                  std::string* resource_version);
  // Streams watch events until the server ends the watch (OK), the handler returns false or
  // `cancel` is set (CANCELLED), the stream goes idle (DEADLINE_EXCEEDED) or fails. A 410 at
  // the start returns OUT_OF_RANGE (IsGone); a 410 inside the stream arrives as a kError event.
  Status Watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
               const WatchHandler& handler);

  StatusOr<nlohmann::json> Create(const ResourceRef& ref, const std::string& ns,
                                  const nlohmann::json& body);
  // POST to a subresource of an object, e.g. pods/binding.
  StatusOr<nlohmann::json> CreateSubresource(const ResourceRef& ref, const std::string& ns,
                                             const std::string& name,
                                             const std::string& subresource,
                                             const nlohmann::json& body);
  // PUT; the body's metadata.resourceVersion makes it a compare-and-swap (Conflict when stale).
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, const std::string& ns,
                                  const std::string& name, const nlohmann::json& body,
                                  const std::string& subresource = "");
  StatusOr<nlohmann::json> MergePatch(const ResourceRef& ref, const std::string& ns,
                                      const std::string& name, const nlohmann::json& patch,
                                      const std::string& subresource = "");
  // Server-side apply with field manager `options.field_manager` ("lockstep").
  StatusOr<nlohmann::json> Apply(const ResourceRef& ref, const std::string& ns,
                                 const std::string& name, const nlohmann::json& object,
                                 bool force = false, const std::string& subresource = "");
  // Returns the server's response (the object while it is being finalized, or a Status).
  StatusOr<nlohmann::json> Delete(const ResourceRef& ref, const std::string& ns,
                                  const std::string& name, const DeleteOptions& options = {});
  // GET of an arbitrary path (e.g. /version, /readyz).
  StatusOr<Response> RawGet(const std::string& path);

  Transport& transport() { return *transport_; }

  // Ends this client's requests for good: one in flight is aborted, one waiting to retry stops
  // waiting, and each returns CANCELLED, as does every later call. For a bounded shutdown: a
  // client retrying a dead apiserver would hold its caller for its whole retry budget (and a
  // caller that retries in a loop, forever). Watches end through their own `cancel`.
  // Thread-safe.
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  // The clock that times its retries; what reads through the client (reflectors) times with it.
  const Clock& clock() const { return clock_; }

 private:
  // Sleeps for `d` unless Cancel() comes first; false when cancelled.
  bool SleepUnlessCancelled(std::chrono::milliseconds d);

  StatusOr<Response> Execute(const std::string& verb, Request request);
  // Logs once per request (`*warned`) when its retries have gone on for kSlowRetry.
  void WarnIfRetryingLong(const std::string& verb, const Request& request, int attempt,
                          const std::string& error, Clock::Steady first_start, bool* warned) const;
  static constexpr std::chrono::seconds kSlowRetry{2};
  StatusOr<nlohmann::json> ExecuteJson(const std::string& verb, Request request);
  Request MakeRequest(std::string method, std::string path, const nlohmann::json* body,
                      std::string content_type = "application/json") const;

  std::shared_ptr<Transport> transport_;
  const RestOptions options_;
  KubeMetrics* metrics_;
  const Clock& clock_;
  TokenBucket limiter_;
  Backoff backoff_;
  const std::string host_;
  std::atomic<bool> cancelled_{false};
  std::mutex cancel_mu_;
  std::condition_variable cancel_cv_;
};

// Percent-encodes a query parameter value.
std::string QueryEscape(const std::string& value);

// Parses JSON, dropping metadata.managedFields while parsing (it is large and never used here).
// Returns INVALID_ARGUMENT on malformed input.
StatusOr<nlohmann::json> ParseObjectJson(std::string_view text);

}  // namespace lockstep::kube
