#include "operator/kube/rest_client.h"

#include <cstdio>
#include <thread>

#include "common/enum_names.h"
#include "common/log.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

bool IsIdempotent(const std::string& method) { return method != "POST"; }

void AppendQuery(std::string* path, const std::string& key, const std::string& value) {
  if (value.empty()) return;
  path->push_back(path->find('?') == std::string::npos ? '?' : '&');
  *path += key + "=" + QueryEscape(value);
}

constexpr NameTable<WatchEventType, 5> kEventTypes = {{{WatchEventType::kAdded, "ADDED"},
                                                       {WatchEventType::kModified, "MODIFIED"},
                                                       {WatchEventType::kDeleted, "DELETED"},
                                                       {WatchEventType::kBookmark, "BOOKMARK"},
                                                       {WatchEventType::kError, "ERROR"}}};

std::optional<WatchEventType> ParseEventType(const std::string& s) {
  return ValueOf(kEventTypes, s);
}

}  // namespace

std::string QueryEscape(const std::string& value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

StatusOr<json> ParseObjectJson(std::string_view text) {
  // managedFields is a reserved metadata field; dropping it at parse time keeps DOMs small.
  const json::parser_callback_t drop_managed = [](int, json::parse_event_t event, json& parsed) {
    return !(event == json::parse_event_t::key && parsed.is_string() &&
             parsed.get_ref<const std::string&>() == "managedFields");
  };
  try {
    return json::parse(text.begin(), text.end(), drop_managed);
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("malformed JSON from server: ") + e.what());
  }
}

std::string ResourceRef::ApiPrefix() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string ResourceRef::CollectionPath(const std::string& ns) const {
  std::string path = ApiPrefix();
  if (namespaced && !ns.empty()) path += "/namespaces/" + ns;
  return path + "/" + resource;
}

std::string ResourceRef::ObjectPath(const std::string& ns, const std::string& name,
                                    const std::string& subresource) const {
  std::string path = CollectionPath(ns) + "/" + name;
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

RestClient::RestClient(std::shared_ptr<Transport> transport, RestOptions options,
                       KubeMetrics* metrics, const Clock& clock)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      metrics_(metrics),
      clock_(clock),
      limiter_(options_.qps, options_.burst, clock),
      backoff_(options_.backoff),
      host_(transport_->Host()) {}

Request RestClient::MakeRequest(std::string method, std::string path, const json* body,
                                std::string content_type) const {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.timeout = options_.timeout;
  if (r.method != "GET") r.fence = options_.write_fence;
  if (body != nullptr) {
    r.body = body->dump();
    r.content_type = std::move(content_type);
  }
  return r;
}

void RestClient::Cancel() {
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    cancelled_ = true;
  }
  cancel_cv_.notify_all();
}

bool RestClient::SleepUnlessCancelled(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(cancel_mu_);
  return !cancel_cv_.wait_for(lock, d, [this] { return cancelled_.load(); });
}

// Retries are quiet (debug) while they are the ordinary kind: a 429 or a reset answered by the
// next try. A request still failing after kSlowRetry is named once at warning level: a start-up
// whose caches never sync, or a status write that lands a minute late, then says why (CI met
// caches unsynced for 34-60 s with nothing in the log).
void RestClient::WarnIfRetryingLong(const std::string& verb, const Request& request, int attempt,
                                    const std::string& error, Clock::Steady first_start,
                                    bool* warned) const {
  if (*warned) return;
  const std::chrono::duration<double> spent = clock_.Now() - first_start;
  if (spent < kSlowRetry) return;
  *warned = true;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f", spent.count());
  log::Warning("request still retrying", {{"verb", verb},
                                          {"path", request.path},
                                          {"attempts", std::to_string(attempt + 1)},
                                          {"seconds", seconds},
                                          {"error", error}});
}

StatusOr<Response> RestClient::Execute(const std::string& verb, Request request) {
  request.cancel = &cancelled_;
  const auto first_start = clock_.Now();
  bool warned = false;
  for (int attempt = 0;; ++attempt) {
    if (cancelled_) return CancelledError(request.method + " " + request.path + ": client stopped");
    limiter_.Wait();
    // After the limiter's wait, which a paused process ends with a burst of sends.
    if (request.fence && !request.fence()) {
      return FailedPreconditionError(request.method + " " + request.path +
                                     ": not sent, this process may no longer write (lease lost)");
    }
    const auto start = clock_.Now();
    StatusOr<Response> result = transport_->Do(request);
    const double seconds = std::chrono::duration<double>(clock_.Now() - start).count();
    if (metrics_ != nullptr) {
      const std::string code = result.ok() ? std::to_string(result->status) : "<error>";
      metrics_->ObserveRequest(code, request.method, host_, verb, seconds);
    }
    const bool last = attempt >= options_.max_retries;
    std::chrono::milliseconds delay = backoff_.Delay(attempt);
    if (!result.ok()) {
      const Status& s = result.status();
      const bool retriable = IsUnavailable(s) || (IsIdempotent(request.method) &&
                                                  (s.code() == StatusCode::kInternal ||
                                                   IsDeadlineExceeded(s)));
      if (!retriable || last) return s.WithContext(request.method + " " + request.path);
      log::Debug("retrying request", {{"verb", verb}, {"error", s.ToString()}});
      WarnIfRetryingLong(verb, request, attempt, s.ToString(), first_start, &warned);
    } else {
      const long code = result->status;
      const bool throttled = code == 429;
      const bool server_error = code >= 500 && code != 501;
      if (code < 400 || last || !(throttled || (server_error && IsIdempotent(request.method)))) {
        return result;
      }
      const ApiError e = ParseApiError(*result);
      if (e.retry_after && *e.retry_after > delay) delay = *e.retry_after;
      log::Debug("retrying request", {{"verb", verb}, {"code", std::to_string(code)}});
      WarnIfRetryingLong(verb, request, attempt, "HTTP " + std::to_string(code), first_start,
                         &warned);
    }
    if (!SleepUnlessCancelled(delay)) {
      return CancelledError(request.method + " " + request.path + ": client stopped");
    }
  }
}

StatusOr<json> RestClient::ExecuteJson(const std::string& verb, Request request) {
  LS_ASSIGN_OR_RETURN(Response response, Execute(verb, std::move(request)));
  if (response.status < 200 || response.status >= 300) {
    return ParseApiError(response).ToStatus();
  }
  return ParseObjectJson(response.body);
}

StatusOr<json> RestClient::Get(const ResourceRef& ref, const std::string& ns,
                               const std::string& name, const std::string& subresource) {
  return ExecuteJson("GET", MakeRequest("GET", ref.ObjectPath(ns, name, subresource), nullptr));
}

StatusOr<ListResult> RestClient::List(const ResourceRef& ref, const std::string& ns,
                                      const ListOptions& options) {
  std::string path = ref.CollectionPath(ns);
  AppendQuery(&path, "labelSelector", options.label_selector);
  AppendQuery(&path, "fieldSelector", options.field_selector);
  AppendQuery(&path, "resourceVersion", options.resource_version);
  AppendQuery(&path, "resourceVersionMatch", options.resource_version_match);
  if (options.limit > 0) AppendQuery(&path, "limit", std::to_string(options.limit));
  AppendQuery(&path, "continue", options.continue_token);
  Request request = MakeRequest("GET", std::move(path), nullptr);
  request.timeout = std::max(request.timeout, std::chrono::milliseconds(std::chrono::minutes(1)));
  LS_ASSIGN_OR_RETURN(json list, ExecuteJson("LIST", std::move(request)));
  ListResult result;
  const json& meta = list.contains("metadata") ? list["metadata"] : json::object();
  result.resource_version = meta.value("resourceVersion", "");
  result.continue_token = meta.value("continue", "");
  if (auto it = list.find("items"); it != list.end() && it->is_array()) {
    result.items = std::move(*it);
  } else {
    result.items = json::array();
  }
  return result;
}

Status RestClient::ListEach(const ResourceRef& ref, const std::string& ns,
                            const ListOptions& options,
                            const std::function<Status(json&& item)>& on_item,
                            std::string* resource_version) {
  ListOptions page_options = options;
  while (true) {
    LS_ASSIGN_OR_RETURN(ListResult page, List(ref, ns, page_options));
    for (auto& item : page.items) LS_RETURN_IF_ERROR(on_item(std::move(item)));
    if (resource_version != nullptr) *resource_version = page.resource_version;
    if (page.continue_token.empty()) return Status::Ok();
    // Later pages must not repeat the first page's resourceVersion arguments.
    page_options.resource_version.clear();
    page_options.resource_version_match.clear();
    page_options.continue_token = std::move(page.continue_token);
  }
}

Status RestClient::Watch(const ResourceRef& ref, const std::string& ns,
                         const WatchOptions& options, const WatchHandler& handler) {
  std::string path = ref.CollectionPath(ns) + "?watch=1";
  AppendQuery(&path, "labelSelector", options.label_selector);
  AppendQuery(&path, "fieldSelector", options.field_selector);
  AppendQuery(&path, "resourceVersion", options.resource_version);
  if (options.allow_bookmarks) AppendQuery(&path, "allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) {
    AppendQuery(&path, "timeoutSeconds", std::to_string(options.timeout_seconds));
  }
  Request request = MakeRequest("GET", std::move(path), nullptr);
  limiter_.Wait();
  Status decode_error;
  StreamOptions stream_options{options.idle_timeout, options.cancel};
  const auto start = clock_.Now();
  StatusOr<Response> result =
      transport_->Stream(request, stream_options, [&](std::string_view line) {
        StatusOr<json> doc = ParseObjectJson(line);
        if (!doc.ok()) {
          decode_error = doc.status();
          return false;
        }
        // A line that is not an object, or whose type is not a string, made json::value()
        // throw out of the watch and end the process (found by tests/fuzz/watch_stream).
        std::optional<WatchEventType> type;
        if (doc->is_object()) {
          auto it = doc->find("type");
          if (it != doc->end() && it->is_string()) type = ParseEventType(it->get<std::string>());
        }
        if (!type || !doc->contains("object")) {
          decode_error = InvalidArgumentError("malformed watch event");
          return false;
        }
        return handler(WatchEvent{*type, std::move((*doc)["object"])});
      });
  if (metrics_ != nullptr) {
    const std::string code = result.ok() ? std::to_string(result->status) : "<error>";
    metrics_->ObserveRequest(code, "GET", host_, "WATCH",
                             std::chrono::duration<double>(clock_.Now() - start).count());
  }
  if (!decode_error.ok()) return decode_error;
  if (!result.ok()) return result.status();
  if (result->status < 200 || result->status >= 300) return ParseApiError(*result).ToStatus();
  return Status::Ok();
}

StatusOr<json> RestClient::Create(const ResourceRef& ref, const std::string& ns,
                                  const json& body) {
  return ExecuteJson("POST", MakeRequest("POST", ref.CollectionPath(ns), &body));
}

StatusOr<json> RestClient::CreateSubresource(const ResourceRef& ref, const std::string& ns,
                                             const std::string& name,
                                             const std::string& subresource, const json& body) {
  return ExecuteJson("POST", MakeRequest("POST", ref.ObjectPath(ns, name, subresource), &body));
}

StatusOr<json> RestClient::Update(const ResourceRef& ref, const std::string& ns,
                                  const std::string& name, const json& body,
                                  const std::string& subresource) {
  return ExecuteJson("PUT", MakeRequest("PUT", ref.ObjectPath(ns, name, subresource), &body));
}

StatusOr<json> RestClient::MergePatch(const ResourceRef& ref, const std::string& ns,
                                      const std::string& name, const json& patch,
                                      const std::string& subresource) {
  return ExecuteJson("PATCH", MakeRequest("PATCH", ref.ObjectPath(ns, name, subresource), &patch,
                                          "application/merge-patch+json"));
}

StatusOr<json> RestClient::Apply(const ResourceRef& ref, const std::string& ns,
                                 const std::string& name, const json& object, bool force,
                                 const std::string& subresource) {
  std::string path = ref.ObjectPath(ns, name, subresource);
  AppendQuery(&path, "fieldManager", options_.field_manager);
  if (force) AppendQuery(&path, "force", "true");
  // JSON is YAML, so the apply content type accepts a JSON body.
  return ExecuteJson("APPLY", MakeRequest("PATCH", std::move(path), &object,
                                          "application/apply-patch+yaml"));
}

StatusOr<json> RestClient::Delete(const ResourceRef& ref, const std::string& ns,
                                  const std::string& name, const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  return ExecuteJson("DELETE", MakeRequest("DELETE", ref.ObjectPath(ns, name), &body));
}

StatusOr<Response> RestClient::RawGet(const std::string& path) {
  return Execute("GET", MakeRequest("GET", path, nullptr));
}

}  // namespace lockstep::kube
