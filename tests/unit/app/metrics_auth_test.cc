// The metrics authorizer: its cache as a table; its reviews over the scripted transport (what
// each review carries, which answer becomes which code, what is cached and for how long, that
// concurrent scrapes with one token share one review). How the real apiserver answers is the
// integration tier's (tests/integration/helm/metrics_secure_test.sh).
#include "operator/app/metrics_auth.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/fake_transport.h"

namespace lockstep::app {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kTokenReviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr char kAccessReviews[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

TEST(ReviewCacheTest, KeepsDecisionsForTheirTtlWithinTheBound) {
  using Steady = Clock::Steady;
  const Steady t0{};
  struct Step {
    std::string what;
    char op;  // 'p'ut or 'g'et
    std::string key;
    int code;  // put: the result's code; get: the expected code, 0 for a miss
    milliseconds at;
  };
  const std::vector<Step> steps = {
      {"allowed is kept", 'p', "a", 200, milliseconds(0)},
      {"hit", 'g', "a", 200, seconds(59)},
      {"allowed expires at 60 s", 'g', "a", 0, seconds(60)},
      {"denied is kept", 'p', "d", 403, seconds(60)},
      {"hit", 'g', "d", 403, seconds(69)},
      {"denied expires at 10 s", 'g', "d", 0, seconds(70)},
      {"unauthenticated is kept", 'p', "u", 401, seconds(70)},
      {"hit", 'g', "u", 401, seconds(75)},
      {"an error is not kept (and drops an older answer)", 'p', "u", 500, seconds(75)},
      {"miss", 'g', "u", 0, seconds(75)},
      {"unknown key", 'g', "zz", 0, seconds(75)},
  };
  ReviewCache cache({seconds(60), seconds(10), 8});
  for (const Step& s : steps) {
    if (s.op == 'p') {
      cache.Put(s.key, {s.code, ""}, t0 + s.at);
    } else {
      std::optional<AuthResult> got = cache.Get(s.key, t0 + s.at);
      EXPECT_EQ(got ? got->code : 0, s.code) << s.what;
    }
  }
}

TEST(ReviewCacheTest, WhenFullDropsExpiredThenTheSoonestToExpire) {
  const Clock::Steady t0{};
  ReviewCache cache({seconds(60), seconds(10), 3});
  cache.Put("denied", {403, ""}, t0);            // expires at 10 s
  cache.Put("old", {200, ""}, t0);               // 60 s
  cache.Put("new", {200, ""}, t0 + seconds(5));  // 65 s
  cache.Put("more", {200, ""}, t0 + seconds(6));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Get("denied", t0 + seconds(6)));  // soonest to expire went first
  EXPECT_TRUE(cache.Get("old", t0 + seconds(6)));
  cache.Put("later", {200, ""}, t0 + seconds(61));  // "old" has expired: it goes, no live one
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_TRUE(cache.Get("new", t0 + seconds(61)));
  EXPECT_TRUE(cache.Get("more", t0 + seconds(61)));
  EXPECT_TRUE(cache.Get("later", t0 + seconds(61)));
  cache.Put("more", {200, ""}, t0 + seconds(62));  // a refresh of a key adds nothing
  EXPECT_EQ(cache.size(), 3u);
}

TEST(ReviewKeyTest, DiffersByTokenVerbAndPathAndHidesTheToken) {
  const std::string k = ReviewKey("secret-token", "get", "/metrics");
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, ReviewKey("secret-token", "get", "/metrics"));
  EXPECT_NE(k, ReviewKey("secret-tokeN", "get", "/metrics"));
  EXPECT_NE(k, ReviewKey("secret-token", "head", "/metrics"));
  EXPECT_NE(k, ReviewKey("secret-token", "get", "/metricsx"));
  EXPECT_NE(ReviewKey("ab", "c", "/"), ReviewKey("a", "bc", "/"));
  EXPECT_EQ(k.find("secret"), std::string::npos);
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

StatusOr<HttpRequest> Scrape(const std::string& authorization) {
  std::string head = "GET /metrics HTTP/1.1\r\nHost: op\r\n";
  if (!authorization.empty()) head += "Authorization: " + authorization + "\r\n";
  return ParseRequestHead(head + "\r\n");
}

class MetricsAuthorizerTest : public testing::FakeKubeTest {
 protected:
  // The apiserver: tokens "good-*" belong to user "system:serviceaccount:mon:<rest>", others
  // are not authenticated; users named in `allowed_` may get /metrics.
  void SetUp() override {
    transport_->SetHandler([this](const kube::Request& r) -> StatusOr<kube::Response> {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !hold_; });
      }
      const json body = json::parse(r.body);
      if (r.path == kTokenReviews) {
        if (token_review_fails_) return Json(500, {{"kind", "Status"}, {"code", 500}});
        const std::string token = body["spec"]["token"];
        json out = body;
        if (token.rfind("good-", 0) == 0) {
          out["status"] = {{"authenticated", true},
                           {"user",
                            {{"username", "system:serviceaccount:mon:" + token.substr(5)},
                             {"uid", "u-1"},
                             {"groups", {"system:serviceaccounts", "system:authenticated"}}}}};
        } else {
          out["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}};
        }
        return Json(201, out);
      }
      if (r.path == kAccessReviews) {
        if (access_review_fails_) return Json(503, {{"kind", "Status"}, {"code", 503}});
        json out = body;
        const std::string user = body["spec"]["user"];
        std::lock_guard<std::mutex> lock(mu_);
        out["status"] = {{"allowed", allowed_.count(user) > 0}};
        return Json(201, out);
      }
      return Json(404, {{"kind", "Status"}});
    });
  }

  AuthResult Check(MetricsAuthorizer& auth, const std::string& authorization) {
    std::promise<AuthResult> got;
    StatusOr<HttpRequest> req = Scrape(authorization);
    EXPECT_TRUE(req.ok());
    auth.Check(*req, [&got](const AuthResult& r) { got.set_value(r); });
    std::future<AuthResult> f = got.get_future();
    if (f.wait_for(seconds(5)) != std::future_status::ready) return {-1, "no answer"};
    return f.get();
  }

  size_t Reviews() { return transport_->RequestsTo("POST", kTokenReviews).size(); }

  void Allow(const std::string& user) {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_.insert(user);
  }

  void Hold(bool hold) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_ = hold;
    }
    cv_.notify_all();
  }

  std::set<std::string> allowed_ = {"system:serviceaccount:mon:prometheus"};  // guarded by mu_
  std::atomic<bool> token_review_fails_{false};
  std::atomic<bool> access_review_fails_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;  // guarded by mu_
};

TEST_F(MetricsAuthorizerTest, AnswersAsControllerRuntimesFilter) {
  MetricsAuthorizer auth(client_, clock_);
  struct Case {
    std::string authorization;
    AuthResult want;
  };
  const Case cases[] = {
      {"", {401, "Unauthorized\n"}},
      {"Basic dXNlcjpwYXNz", {401, "Unauthorized\n"}},
      {"Bearer garbage", {401, "Unauthorized\n"}},
      {"Bearer good-prometheus", {200, ""}},
      {"Bearer good-intruder",
       {403, "Authorization denied for user system:serviceaccount:mon:intruder\n"}},
  };
  for (const Case& c : cases) EXPECT_EQ(Check(auth, c.authorization), c.want) << c.authorization;
  // No token, no review; each token once: a TokenReview, and an access review once authenticated.
  EXPECT_EQ(Reviews(), 3u);
  const std::vector<json> access = transport_->BodiesTo("POST", kAccessReviews);
  ASSERT_EQ(access.size(), 2u);
  const json& spec = access[0]["spec"];
  EXPECT_EQ(spec["user"], "system:serviceaccount:mon:prometheus");
  EXPECT_EQ(spec["uid"], "u-1");
  EXPECT_EQ(spec["groups"], json({"system:serviceaccounts", "system:authenticated"}));
  EXPECT_EQ(spec["nonResourceAttributes"], json({{"path", "/metrics"}, {"verb", "get"}}));
  EXPECT_EQ(access[0]["kind"], "SubjectAccessReview");
  EXPECT_EQ(transport_->BodiesTo("POST", kTokenReviews)[0]["spec"]["token"], "garbage");
}

TEST_F(MetricsAuthorizerTest, CachesDecisionsForTheirTtl) {
  MetricsAuthorizer auth(client_, clock_);
  EXPECT_EQ(Check(auth, "Bearer good-prometheus").code, 200);
  EXPECT_EQ(Check(auth, "Bearer good-intruder").code, 403);
  EXPECT_EQ(Check(auth, "Bearer garbage").code, 401);
  EXPECT_EQ(Reviews(), 3u);
  clock_.Advance(seconds(9));  // every answer still cached: scrapes cost no call
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Check(auth, "Bearer good-prometheus").code, 200);
    EXPECT_EQ(Check(auth, "Bearer good-intruder").code, 403);
    EXPECT_EQ(Check(auth, "Bearer garbage").code, 401);
  }
  EXPECT_EQ(Reviews(), 3u);
  clock_.Advance(seconds(2));  // 11 s: the refusals are asked again (a new binding shows)
  Allow("system:serviceaccount:mon:intruder");
  EXPECT_EQ(Check(auth, "Bearer good-intruder").code, 200);
  EXPECT_EQ(Check(auth, "Bearer good-prometheus").code, 200);
  EXPECT_EQ(Reviews(), 4u);
  clock_.Advance(seconds(50));  // 61 s: the allowed one too
  EXPECT_EQ(Check(auth, "Bearer good-prometheus").code, 200);
  EXPECT_EQ(Reviews(), 5u);
}

TEST_F(MetricsAuthorizerTest, FailedReviewsAreAnsweredAndNotCached) {
  MetricsAuthorizer auth(client_, clock_);
  token_review_fails_ = true;
  EXPECT_EQ(Check(auth, "Bearer good-prometheus"), (AuthResult{401, "Authentication failed\n"}));
  token_review_fails_ = false;
  access_review_fails_ = true;
  EXPECT_EQ(
      Check(auth, "Bearer good-prometheus"),
      (AuthResult{500, "Authorization for user system:serviceaccount:mon:prometheus failed\n"}));
  access_review_fails_ = false;
  EXPECT_EQ(Check(auth, "Bearer good-prometheus").code, 200);
  EXPECT_EQ(Reviews(), 3u);
}

// Scrapes that arrive while their token's review runs wait for it; distinct tokens beyond
// kMaxPending are refused at once instead of queueing reviews without bound.
TEST_F(MetricsAuthorizerTest, ConcurrentScrapesShareAReviewAndPendingIsBounded) {
  MetricsAuthorizer auth(client_, clock_);
  Hold(true);
  std::mutex got_mu;
  std::vector<AuthResult> got;
  auto record = [&](const AuthResult& r) {
    std::lock_guard<std::mutex> lock(got_mu);
    got.push_back(r);
  };
  StatusOr<HttpRequest> same = Scrape("Bearer good-prometheus");
  for (int i = 0; i < 5; ++i) auth.Check(*same, record);
  for (size_t i = 1; i < MetricsAuthorizer::kMaxPending; ++i) {
    auth.Check(*Scrape("Bearer other-" + std::to_string(i)), record);
  }
  AuthResult refused;
  auth.Check(*Scrape("Bearer one-too-many"), [&refused](const AuthResult& r) { refused = r; });
  EXPECT_EQ(refused.code, 503);  // answered at once, on this thread
  Hold(false);
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::lock_guard<std::mutex> lock(got_mu);
        return got.size() == 5 + MetricsAuthorizer::kMaxPending - 1;
      },
      seconds(10)));
  EXPECT_EQ(Reviews(), MetricsAuthorizer::kMaxPending);  // one per distinct token
  int ok = 0;
  for (const AuthResult& r : got) ok += r.code == 200;
  EXPECT_EQ(ok, 5);
}

}  // namespace
}  // namespace lockstep::app
