// Bearer tokens from a file: rewriting the file switches the identity of the very next request.
// Tokens come from the TokenRequest API for two ServiceAccounts: one without rights, one bound
// to a Role that may list ConfigMaps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/kube/test_env.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

StatusOr<std::string> RequestToken(RestClient& client, const std::string& ns,
                                   const std::string& sa) {
  json request = {{"apiVersion", "authentication.k8s.io/v1"},
                  {"kind", "TokenRequest"},
                  {"spec", {{"expirationSeconds", 3600}}}};
  LS_ASSIGN_OR_RETURN(json response,
                      client.CreateSubresource(resources::ServiceAccounts(), ns, sa, "token",
                                               request));
  return response["status"].value("token", "");
}

TEST(TokenFileTest, RewrittenTokenFileIsUsedByTheNextRequest) {
  LS_REQUIRE_CLUSTER();
  auto admin = testing::Connect();
  ASSERT_TRUE(admin.ok()) << admin.status();
  RestClient& client = *admin->client;
  testing::TestNamespace ns(client, "kube-token");
  ASSERT_TRUE(ns.status().ok()) << ns.status();

  for (const char* sa : {"nobody", "reader"}) {
    ASSERT_TRUE(client.Create(resources::ServiceAccounts(), ns.name(),
                              {{"apiVersion", "v1"}, {"kind", "ServiceAccount"},
                               {"metadata", {{"name", sa}}}}).ok());
  }
  const ResourceRef roles{"rbac.authorization.k8s.io", "v1", "roles", true};
  const ResourceRef bindings{"rbac.authorization.k8s.io", "v1", "rolebindings", true};
  ASSERT_TRUE(client.Create(roles, ns.name(),
      {{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "Role"},
       {"metadata", {{"name", "cm-reader"}}},
       {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"configmaps"}},
                               {"verbs", {"get", "list"}}}})}}).ok());
  ASSERT_TRUE(client.Create(bindings, ns.name(),
      {{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "RoleBinding"},
       {"metadata", {{"name", "reader"}}},
       {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"},
                    {"name", "cm-reader"}}},
       {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "reader"},
                                  {"namespace", ns.name()}}})}}).ok());
  auto token_a = RequestToken(client, ns.name(), "nobody");
  auto token_b = RequestToken(client, ns.name(), "reader");
  ASSERT_TRUE(token_a.ok()) << token_a.status();
  ASSERT_TRUE(token_b.ok()) << token_b.status();
  ASSERT_FALSE(token_a->empty());

  const std::filesystem::path file =
      std::filesystem::path(::testing::TempDir()) / ("token-" + ns.name());
  std::ofstream(file, std::ios::trunc) << *token_a;
  ClusterConfig config = admin->config;
  config.client_cert_pem.clear();  // authenticate by the token alone
  config.client_key_pem.clear();
  config.token = TokenSource::FromFile(file);
  auto transport = NewCurlTransport(config);
  ASSERT_TRUE(transport.ok());
  RestClient as_sa(std::shared_ptr<Transport>(std::move(transport).value()), testing::NoLimits());

  auto denied = as_sa.List(resources::ConfigMaps(), ns.name());
  EXPECT_TRUE(IsForbidden(denied.status())) << denied.status();
  EXPECT_NE(denied.status().message().find("nobody"), std::string::npos) << denied.status();

  // Rewrite in place (same path), like a rotated projected token.
  std::ofstream(file, std::ios::trunc) << *token_b << "\n";
  auto allowed = as_sa.List(resources::ConfigMaps(), ns.name());
  EXPECT_TRUE(allowed.ok()) << allowed.status();

  std::ofstream(file, std::ios::trunc) << "not-a-token";
  EXPECT_TRUE(IsUnauthorized(as_sa.List(resources::ConfigMaps(), ns.name()).status()));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace lockstep::kube
