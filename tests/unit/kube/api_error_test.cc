#include "operator/kube/api_error.h"

#include <gtest/gtest.h>

namespace lockstep::kube {
namespace {

Response Resp(long code, std::string body, std::string retry_after = "") {
  return Response{code, std::move(body), std::move(retry_after)};
}

TEST(ApiErrorTest, InvalidKeepsEveryFieldPath) {
  const auto e = ParseApiError(Resp(422, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"ConfigMap \"x\" is invalid: metadata.name: Invalid value",
    "reason":"Invalid","details":{"name":"x","kind":"ConfigMap","causes":[
      {"reason":"FieldValueInvalid","message":"Invalid value","field":"metadata.name"},
      {"reason":"FieldValueRequired","message":"Required value","field":"data.key"}]},
    "code":422})"));
  EXPECT_EQ(e.reason, "Invalid");
  ASSERT_EQ(e.causes.size(), 2u);
  EXPECT_EQ(e.causes[1].field, "data.key");
  const Status s = e.ToStatus();
  EXPECT_TRUE(IsInvalid(s));
  EXPECT_NE(s.message().find("metadata.name"), std::string::npos);
  EXPECT_NE(s.message().find("data.key: Required value"), std::string::npos);
  EXPECT_NE(s.message().find("[reason=Invalid code=422]"), std::string::npos);
}

// The two kinds of 403 a controller meets: a namespace being deleted, and RBAC.
TEST(ApiErrorTest, NamespaceTerminatingIsToldApartFromAnRbacRefusal) {
  const Status terminating = ParseApiError(Resp(403, R"({"kind":"Status","status":"Failure",
    "message":"pods \"a\" is forbidden: unable to create new content in namespace ns1 because it is being terminated",
    "reason":"Forbidden","details":{"name":"a","kind":"pods","causes":[
      {"reason":"NamespaceTerminating","message":"namespace ns1 is being terminated",
       "field":"metadata.namespace"}]},"code":403})")).ToStatus();
  EXPECT_TRUE(IsForbidden(terminating));
  EXPECT_TRUE(IsNamespaceTerminating(terminating)) << terminating.message();
  const Status rbac = ParseApiError(Resp(403, R"({"kind":"Status","status":"Failure",
    "message":"pods is forbidden: User \"system:serviceaccount:x:y\" cannot create resource \"pods\" in API group \"\" in the namespace \"ns1\"",
    "reason":"Forbidden","details":{"kind":"pods"},"code":403})")).ToStatus();
  EXPECT_TRUE(IsForbidden(rbac));
  EXPECT_FALSE(IsNamespaceTerminating(rbac));
  // A message that merely mentions the cause is not the cause.
  EXPECT_FALSE(IsNamespaceTerminating(
      Status(StatusCode::kPermissionDenied, "cause=NamespaceTerminating] said someone")));
}

TEST(ApiErrorTest, ReasonsMapToCodes) {
  auto status = [](long code, const char* reason) {
    return ParseApiError(Resp(code, std::string(R"({"kind":"Status","reason":")") + reason +
                                        R"(","message":"m","code":)" + std::to_string(code) +
                                        "}"))
        .ToStatus();
  };
  EXPECT_TRUE(IsNotFound(status(404, "NotFound")));
  EXPECT_TRUE(IsAlreadyExists(status(409, "AlreadyExists")));
  EXPECT_TRUE(IsConflict(status(409, "Conflict")));
  EXPECT_TRUE(IsForbidden(status(403, "Forbidden")));
  EXPECT_TRUE(IsUnauthorized(status(401, "Unauthorized")));
  EXPECT_TRUE(IsGone(status(410, "Expired")));
  EXPECT_TRUE(IsGone(status(410, "Gone")));
  EXPECT_TRUE(IsTooManyRequests(status(429, "TooManyRequests")));
  EXPECT_TRUE(IsTimeout(status(504, "Timeout")));
  EXPECT_TRUE(IsUnavailable(status(503, "ServiceUnavailable")));
  EXPECT_FALSE(IsConflict(status(409, "AlreadyExists")));
}

TEST(ApiErrorTest, RetryAfterFromHeaderOrDetails) {
  auto e = ParseApiError(Resp(429, R"({"kind":"Status","reason":"TooManyRequests",
      "details":{"retryAfterSeconds":7},"code":429})", "3"));
  ASSERT_TRUE(e.retry_after.has_value());
  EXPECT_EQ(e.retry_after->count(), 3);  // the header wins
  e = ParseApiError(Resp(429, R"({"kind":"Status","reason":"TooManyRequests",
      "details":{"retryAfterSeconds":7},"code":429})"));
  ASSERT_TRUE(e.retry_after.has_value());
  EXPECT_EQ(e.retry_after->count(), 7);
}

TEST(ApiErrorTest, NonStatusBodyFallsBackToHttpCode) {
  const Status s = ParseApiError(Resp(502, "<html>bad gateway</html>")).ToStatus();
  EXPECT_TRUE(IsUnavailable(s));
  EXPECT_NE(s.message().find("bad gateway"), std::string::npos);
  EXPECT_TRUE(IsNotFound(ParseApiError(Resp(404, "")).ToStatus()));
}

TEST(ApiErrorTest, WatchErrorEvent) {
  const auto e = ApiErrorFromStatusJson(
      R"j({"kind":"Status","status":"Failure","message":"too old resource version: 1 (2)",
          "reason":"Expired","code":410})j");
  EXPECT_TRUE(IsGone(e.ToStatus()));
}

}  // namespace
}  // namespace lockstep::kube
