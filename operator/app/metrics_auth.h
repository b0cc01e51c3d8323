#pragma once
// Who may read /metrics with --metrics-secure, decided as controller-runtime's
// filters.WithAuthenticationAndAuthorization decides it (kubebuilder's default): the request's
// bearer token is checked with a TokenReview, then the user it names with a SubjectAccessReview
// for the request's verb ("get") on the non-resource URL (its path, "/metrics"). No token, or
// one the apiserver does not accept: 401. Accepted but not allowed: 403 ("Authorization denied
// for user <name>"). A review that fails (the apiserver unreachable, the operator lacking RBAC
// to create reviews): 401 "Authentication failed" or 500 "Authorization for user <name>
// failed", as controller-runtime answers, never cached.
//
// Cost: decisions are cached by a SHA-256 of token, verb and path (tokens themselves are never
// kept, nor logged) for kAllowedTtl when allowed and kDeniedTtl when refused, at most
// kMaxEntries; a Prometheus scraping every few seconds costs two API calls a minute, and a role
// bound or unbound takes effect within those TTLs. Requests for the same key that arrive while
// its review runs wait for that one review.
//
// Threads: the reviews run on the authorizer's own thread, one after the other, each call
// bounded by kCallTimeout (two calls stay within the HTTP server's request deadline), so the
// server's poll loop never waits on the apiserver. At most kMaxPending distinct keys wait for a
// review; more get 503 at once (a flood of made-up tokens costs the apiserver that many reviews
// at a time, not one per connection).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "operator/app/http_request.h"
#include "operator/kube/rest_client.h"

namespace lockstep::app {

// An HTTP answer to the question "may this request read it": 200 yes, else the code and body.
struct AuthResult {
  int code = 0;
  std::string message;
  bool operator==(const AuthResult&) const = default;
};

// The cache key of a review: SHA-256 (hex) of token, verb and path. The token cannot be
// recovered from it.
std::string ReviewKey(std::string_view token, std::string_view verb, std::string_view path);

// Decisions by key with a TTL per outcome and a bound on entries. Only 200, 401 and 403 are
// kept (a failed review is asked again: the caller does not Put it). When full, expired entries go
// first, then the one that expires soonest. Pure; not thread-safe.
class ReviewCache {
 public:
  struct Options {
    std::chrono::milliseconds allowed_ttl;
    std::chrono::milliseconds denied_ttl;
    size_t max_entries;
  };
  explicit ReviewCache(Options options) : options_(options) {}

  std::optional<AuthResult> Get(const std::string& key, Clock::Steady now) const;
  void Put(const std::string& key, const AuthResult& result, Clock::Steady now);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    AuthResult result;
    Clock::Steady expires;
  };
  const Options options_;
  std::unordered_map<std::string, Entry> entries_;
};

class MetricsAuthorizer {
 public:
  static constexpr std::chrono::seconds kAllowedTtl{60};
  static constexpr std::chrono::seconds kDeniedTtl{10};
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxPending = 16;
  static constexpr std::chrono::seconds kCallTimeout{2};

  // The RestOptions for the client the reviews go through: its own (not the reconciles'), never
  // fenced by the leader's lease (a standby serves /metrics too), each call bounded by
  // kCallTimeout and not retried (a scrape that failed is asked again by the next scrape).
  static kube::RestOptions ClientOptions();

  // `client` must outlive this. Starts the review thread.
  MetricsAuthorizer(kube::RestClient& client, const Clock& clock = RealClock::Get());
  // Stops the thread; reviews still queued are answered 503 first.
  ~MetricsAuthorizer();
  MetricsAuthorizer(const MetricsAuthorizer&) = delete;
  MetricsAuthorizer& operator=(const MetricsAuthorizer&) = delete;

  // Calls `done` exactly once: at once on the caller's thread when the request has no bearer
  // token or its decision is cached, otherwise later from the review thread. Thread-safe.
  void Check(const HttpRequest& request, std::function<void(AuthResult)> done);

 private:
  struct Pending {
    std::string token;
    std::string verb;
    std::string path;
    std::vector<std::function<void(AuthResult)>> waiters;
  };
  void Run();
  // TokenReview, then SubjectAccessReview: the answer for one token; `*decided` when it is the
  // apiserver's decision (cached), not a failure to get one.
  AuthResult Review(const Pending& p, bool* decided);
  AuthResult ReviewOrThrow(const Pending& p, bool* decided);  // json::exception on odd answers

  kube::RestClient& client_;
  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                       // guarded by mu_
  ReviewCache cache_;                       // guarded by mu_
  std::map<std::string, Pending> pending_;  // guarded by mu_; by key
  std::deque<std::string> queue_;           // guarded by mu_; keys in arrival order
  std::thread thread_;                      // last: starts after the members above exist
};

}  // namespace lockstep::app
