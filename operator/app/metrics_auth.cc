#include "operator/app/metrics_auth.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

#include "common/log.h"

namespace lockstep::app {
namespace {

using nlohmann::json;

kube::ResourceRef TokenReviews() { return {"authentication.k8s.io", "v1", "tokenreviews", false}; }
kube::ResourceRef SubjectAccessReviews() {
  return {"authorization.k8s.io", "v1", "subjectaccessreviews", false};
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string ReviewKey(std::string_view token, std::string_view verb, std::string_view path) {
  // Lengths first, so no two (token, verb, path) triples hash the same bytes.
  std::string in = std::to_string(token.size()) + ":" + std::to_string(verb.size()) + ":";
  in.append(token).append(verb).append(path);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(in.data(), in.size(), md, &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::optional<AuthResult> ReviewCache::Get(const std::string& key, Clock::Steady now) const {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.expires <= now) return std::nullopt;
  return it->second.result;
}

void ReviewCache::Put(const std::string& key, const AuthResult& result, Clock::Steady now) {
  std::chrono::milliseconds ttl{0};
  if (result.code == 200) {
    ttl = options_.allowed_ttl;
  } else if (result.code == 401 || result.code == 403) {
    ttl = options_.denied_ttl;
  }
  if (ttl <= std::chrono::milliseconds(0) || options_.max_entries == 0) {
    entries_.erase(key);  // a failed review is not an answer: the next request asks again
    return;
  }
  if (!entries_.contains(key) && entries_.size() >= options_.max_entries) {
    std::erase_if(entries_, [now](const auto& e) { return e.second.expires <= now; });
    if (entries_.size() >= options_.max_entries) {
      auto soonest = std::min_element(entries_.begin(), entries_.end(), [](auto& a, auto& b) {
        return a.second.expires < b.second.expires;
      });
      entries_.erase(soonest);
    }
  }
  entries_[key] = Entry{result, now + ttl};
}

kube::RestOptions MetricsAuthorizer::ClientOptions() {
  kube::RestOptions o;
  // The cache keeps a steady scraper at two calls a minute; this only bounds a flood of new
  // tokens (kMaxPending bounds it too).
  o.qps = 20;
  o.burst = 40;
  o.max_retries = 0;
  o.timeout = kCallTimeout;
  return o;
}

MetricsAuthorizer::MetricsAuthorizer(kube::RestClient& client, const Clock& clock)
    : client_(client),
      clock_(clock),
      cache_({kAllowedTtl, kDeniedTtl, kMaxEntries}),
      thread_([this] { Run(); }) {}

MetricsAuthorizer::~MetricsAuthorizer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MetricsAuthorizer::Check(const HttpRequest& request, std::function<void(AuthResult)> done) {
  const std::optional<std::string> token = BearerToken(request);
  if (!token) {
    done({401, "Unauthorized\n"});
    return;
  }
  // As the apiserver's RequestInfo for a non-resource URL: the method, lower-cased.
  const std::string verb = Lower(request.method);
  const std::string key = ReviewKey(*token, verb, request.path);
  std::unique_lock<std::mutex> lock(mu_);
  if (std::optional<AuthResult> hit = cache_.Get(key, clock_.Now())) {
    lock.unlock();
    done(*hit);
    return;
  }
  if (auto it = pending_.find(key); it != pending_.end()) {
    it->second.waiters.push_back(std::move(done));
    return;
  }
  if (stop_ || pending_.size() >= kMaxPending) {
    lock.unlock();
    done({503, "too many requests waiting for their authorization; try again\n"});
    return;
  }
  Pending& p = pending_[key];
  p.token = *token;
  p.verb = verb;
  p.path = request.path;
  p.waiters.push_back(std::move(done));
  queue_.push_back(key);
  lock.unlock();
  cv_.notify_one();
}

void MetricsAuthorizer::Run() {
  while (true) {
    std::string key;
    Pending work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      key = std::move(queue_.front());
      queue_.pop_front();
      const Pending& p = pending_.at(key);
      work.token = p.token;
      work.verb = p.verb;
      work.path = p.path;
    }
    bool decided = false;
    const AuthResult result = Review(work, &decided);
    std::vector<std::function<void(AuthResult)>> waiters;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (decided) cache_.Put(key, result, clock_.Now());
      waiters = std::move(pending_.extract(key).mapped().waiters);
    }
    for (auto& done : waiters) done(result);
  }
  std::map<std::string, Pending> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(pending_);
    queue_.clear();
  }
  for (auto& [key, p] : left) {
    for (auto& done : p.waiters) done({503, "shutting down\n"});
  }
}

AuthResult MetricsAuthorizer::Review(const Pending& p, bool* decided) {
  try {
    return ReviewOrThrow(p, decided);
  } catch (const json::exception& e) {
    log::Warning("metrics authorization failed: unexpected review answer", {{"error", e.what()}});
    return {500, "Authorization failed\n"};
  }
}

AuthResult MetricsAuthorizer::ReviewOrThrow(const Pending& p, bool* decided) {
  // Errors are logged with the apiserver's answer, never with the request (it holds the token).
  StatusOr<json> tr = client_.Create(TokenReviews(), "",
                                     {{"apiVersion", "authentication.k8s.io/v1"},
                                      {"kind", "TokenReview"},
                                      {"spec", {{"token", p.token}}}});
  if (!tr.ok()) {
    log::Warning("metrics authentication failed: TokenReview",
                 {{"path", p.path}, {"error", tr.status().ToString()}});
    return {401, "Authentication failed\n"};
  }
  const json status = tr->value("status", json::object());
  if (!status.value("authenticated", false)) {
    *decided = true;
    return {401, "Unauthorized\n"};
  }
  const json user = status.value("user", json::object());
  const std::string name = user.value("username", "");
  json spec = {{"user", name}, {"nonResourceAttributes", {{"path", p.path}, {"verb", p.verb}}}};
  if (user.contains("uid")) spec["uid"] = user["uid"];
  if (user.contains("groups")) spec["groups"] = user["groups"];
  if (user.contains("extra")) spec["extra"] = user["extra"];
  StatusOr<json> sar = client_.Create(
      SubjectAccessReviews(), "",
      {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
  if (!sar.ok()) {
    log::Warning("metrics authorization failed: SubjectAccessReview",
                 {{"user", name}, {"path", p.path}, {"error", sar.status().ToString()}});
    return {500, "Authorization for user " + name + " failed\n"};
  }
  *decided = true;
  if (!sar->value("status", json::object()).value("allowed", false)) {
    return {403, "Authorization denied for user " + name + "\n"};
  }
  return {200, ""};
}

}  // namespace lockstep::app
