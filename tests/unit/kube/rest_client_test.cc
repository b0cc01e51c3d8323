// The retry policy and request encoding of RestClient, with a scripted transport
// (tests/testing/fake_transport.h). Behaviour against the API server itself is covered by
// tests/integration/kube.
#include "operator/kube/rest_client.h"

#include <gtest/gtest.h>

#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_transport.h"

namespace lockstep::kube {
namespace {

using ::lockstep::testing::FakeTransport;
using nlohmann::json;

RestOptions FastRetries() {
  RestOptions o;
  o.qps = 0;
  o.max_retries = 3;
  o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(2), 2.0, 0.0};
  return o;
}

const char* kConfigMap = R"({"kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"5",
  "managedFields":[{"manager":"kubectl"}]}})";

TEST(RestClientTest, PathsAndEscaping) {
  EXPECT_EQ(resources::Pods().ObjectPath("ns", "p", "binding"),
            "/api/v1/namespaces/ns/pods/p/binding");
  EXPECT_EQ(resources::Nodes().ObjectPath("ignored", "n"), "/api/v1/nodes/n");
  EXPECT_EQ(resources::Leases().CollectionPath("kube-node-lease"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases");
  EXPECT_EQ(resources::Pods().CollectionPath(""), "/api/v1/pods");
  EXPECT_EQ(QueryEscape("a=b,c!=d e/f"), "a%3Db%2Cc%21%3Dd%20e%2Ff");
}

TEST(RestClientTest, ParseDropsManagedFields) {
  auto j = ParseObjectJson(kConfigMap);
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE((*j)["metadata"].contains("managedFields"));
  EXPECT_EQ((*j)["metadata"]["resourceVersion"], "5");
  EXPECT_FALSE(ParseObjectJson("{nope").ok());
}

TEST(RestClientTest, RetriesThrottlingAndServerErrorsForGet) {
  auto t = std::make_shared<FakeTransport>();
  t->Push(Response{429, R"({"kind":"Status","reason":"TooManyRequests","code":429})", "0"});
  t->Push(Response{503, "", ""});
  t->Push(UnavailableError("connect: refused"));
  t->Push(Response{200, kConfigMap, ""});
  RestClient client(t, FastRetries());
  auto got = client.Get(resources::ConfigMaps(), "ns", "c");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(t->requests().size(), 4u);
  EXPECT_EQ(t->requests()[0].path, "/api/v1/namespaces/ns/configmaps/c");
}

// Retries that go on for 2 s or more are named once at warning level (the path, the attempts,
// the last error); quick ones stay at debug. Each answer here takes 1.5 s of the fake clock.
TEST(RestClientTest, RetriesThatGoOnAreNamedOnceAtWarningLevel) {
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  for (const int throttled : {1, 4}) {
    SCOPED_TRACE(std::to_string(throttled) + " throttled answers");
    ::lockstep::testing::FakeClock clock;
    auto t = std::make_shared<FakeTransport>();
    t->SetHandler([&clock, &t, throttled](const Request&) -> StatusOr<Response> {
      clock.Advance(std::chrono::milliseconds(1500));
      if (t->requests().size() <= static_cast<size_t>(throttled)) return Response{429, "", ""};
      return Response{200, kConfigMap, ""};
    });
    RestOptions o = FastRetries();
    o.max_retries = 5;
    RestClient client(t, o, nullptr, clock);
    ::testing::internal::CaptureStderr();
    auto got = client.Get(resources::ConfigMaps(), "ns", "c");
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(got.ok()) << got.status();
    if (throttled == 1) {
      EXPECT_EQ(count(err, "request still retrying"), 0u) << err;
    } else {
      EXPECT_EQ(count(err, "request still retrying"), 1u) << err;
      EXPECT_NE(err.find("/api/v1/namespaces/ns/configmaps/c"), std::string::npos) << err;
      EXPECT_NE(err.find("HTTP 429"), std::string::npos) << err;
    }
  }
}

TEST(RestClientTest, NeverRetriesOtherClientErrors) {
  auto t = std::make_shared<FakeTransport>();
  t->Push(Response{409, R"({"kind":"Status","reason":"Conflict","message":"stale","code":409})",
                   ""});
  RestClient client(t, FastRetries());
  auto r = client.Update(resources::ConfigMaps(), "ns", "c", json::parse(kConfigMap));
  EXPECT_TRUE(IsConflict(r.status()));
  EXPECT_EQ(t->requests().size(), 1u);
}

TEST(RestClientTest, CreateRetriesOnlyWhenNotSentOrThrottled) {
  auto t = std::make_shared<FakeTransport>();
  t->Push(UnavailableError("connect: refused"));  // never sent: retry
  t->Push(Response{429, "", ""});                  // rejected before processing: retry
  t->Push(Response{500, "", ""});                  // may have been processed: give up
  RestClient client(t, FastRetries());
  auto r = client.Create(resources::ConfigMaps(), "ns", json::parse(kConfigMap));
  EXPECT_TRUE(IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(t->requests().size(), 3u);

  auto t2 = std::make_shared<FakeTransport>();
  t2->Push(InternalError("connection reset after send"));
  RestClient client2(t2, FastRetries());
  EXPECT_FALSE(client2.Create(resources::ConfigMaps(), "ns", json::parse(kConfigMap)).ok());
  EXPECT_EQ(t2->requests().size(), 1u);
}

TEST(RestClientTest, GivesUpAfterMaxRetries) {
  auto t = std::make_shared<FakeTransport>();
  for (int i = 0; i < 10; ++i) t->Push(Response{503, "", ""});
  RestClient client(t, FastRetries());
  EXPECT_TRUE(IsUnavailable(client.Get(resources::Pods(), "ns", "p").status()));
  EXPECT_EQ(t->requests().size(), 4u);  // 1 + max_retries
}

TEST(RestClientTest, EncodesVerbs) {
  auto t = std::make_shared<FakeTransport>();
  for (int i = 0; i < 4; ++i) t->Push(Response{200, kConfigMap, ""});
  RestClient client(t, FastRetries());
  ASSERT_TRUE(client.Apply(resources::ConfigMaps(), "ns", "c", json::parse(kConfigMap), true).ok());
  EXPECT_EQ(t->requests()[0].method, "PATCH");
  EXPECT_EQ(t->requests()[0].content_type, "application/apply-patch+yaml");
  EXPECT_EQ(t->requests()[0].path,
            "/api/v1/namespaces/ns/configmaps/c?fieldManager=lockstep&force=true");
  ASSERT_TRUE(client.MergePatch(resources::Pods(), "ns", "p", {{"a", 1}}, "status").ok());
  EXPECT_EQ(t->requests()[1].content_type, "application/merge-patch+json");
  EXPECT_EQ(t->requests()[1].path, "/api/v1/namespaces/ns/pods/p/status");
  DeleteOptions del;
  del.precondition_uid = "u";
  del.propagation_policy = "Foreground";
  del.grace_period_seconds = 0;
  ASSERT_TRUE(client.Delete(resources::Pods(), "ns", "p", del).ok());
  const json body = json::parse(t->requests()[2].body);
  EXPECT_EQ(body["preconditions"]["uid"], "u");
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["gracePeriodSeconds"], 0);
  ListOptions list;
  list.label_selector = "app=x";
  list.limit = 2;
  t->Push(Response{200, R"({"metadata":{"resourceVersion":"9","continue":"tok"},"items":[]})", ""});
  ASSERT_TRUE(client.List(resources::Pods(), "ns", list).ok());
}

TEST(RestClientTest, WatchDecodesEventsAndErrors) {
  auto t = std::make_shared<FakeTransport>();
  t->SetStreamLines({
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}})",
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"});
  RestClient client(t, FastRetries());
  std::vector<WatchEventType> types;
  WatchOptions options;
  options.resource_version = "1";
  Status s = client.Watch(resources::Pods(), "ns", options, [&](WatchEvent&& e) {
    types.push_back(e.type);
    return true;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(types, (std::vector<WatchEventType>{WatchEventType::kAdded, WatchEventType::kBookmark,
                                                WatchEventType::kError}));
  EXPECT_EQ(t->requests()[0].path,
            "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=1&allowWatchBookmarks=true");
  t->SetStreamLines({"not json"});
  EXPECT_TRUE(IsInvalidArgument(
      client.Watch(resources::Pods(), "ns", options, [](WatchEvent&&) { return true; })));
}

// A leader's fence (RestOptions::write_fence, LeaderElector::MayWrite): closed, every write is
// refused before it reaches the transport and reads still go; open, writes carry the fence to
// the transport, which asks it again just before sending (Request::fence).
TEST(RestClientTest, WriteFenceRefusesWritesUnsentButNotReads) {
  auto t = std::make_shared<FakeTransport>();
  bool open = false;
  RestOptions options = FastRetries();
  options.write_fence = [&open] { return open; };
  RestClient client(t, options);
  const json cm = json::parse(kConfigMap);
  EXPECT_EQ(client.Create(resources::ConfigMaps(), "ns", cm).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(client.Delete(resources::ConfigMaps(), "ns", "c").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(t->requests().empty()) << "a fenced write reached the transport";
  t->Push(Response{200, kConfigMap, ""});
  EXPECT_TRUE(client.Get(resources::ConfigMaps(), "ns", "c").ok());
  ASSERT_EQ(t->requests().size(), 1u);
  EXPECT_FALSE(t->requests()[0].fence) << "reads are never fenced";
  open = true;
  t->Push(Response{201, kConfigMap, ""});
  EXPECT_TRUE(client.Create(resources::ConfigMaps(), "ns", cm).ok());
  ASSERT_EQ(t->requests().size(), 2u);
  ASSERT_TRUE(t->requests()[1].fence);
  open = false;
  EXPECT_FALSE(t->requests()[1].fence()) << "the transport sees the fence as it is now";
}

// Found by tests/fuzz/watch_stream: a line holding JSON that is not an object made
// json::value() throw out of the watch, which ended the whole operator.
TEST(RestClientTest, WatchLineThatIsNotAnObjectIsAnError) {
  auto t = std::make_shared<FakeTransport>();
  RestClient client(t, FastRetries());
  for (const char* line : {R"("type")", "42", "[1,2]", "null", R"({"type":1,"object":{}})"}) {
    t->SetStreamLines({line});
    Status s = client.Watch(resources::Pods(), "ns", {}, [](WatchEvent&&) { return true; });
    EXPECT_TRUE(IsInvalidArgument(s)) << line << ": " << s;
  }
}

}  // namespace
}  // namespace lockstep::kube
