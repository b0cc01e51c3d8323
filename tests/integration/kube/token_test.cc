// Bearer tokens from a file: rewriting the file switches the identity of the very next request.
// Tokens come from the TokenRequest API for two ServiceAccounts: one without rights, one bound
// to a Role that may list ConfigMaps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

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

// Issue 18: the in-cluster ca.crt is re-read like the token. A pod whose CA bundle is rewritten
// (the cluster's CA rotated) verifies the apiserver with the new one, without a restart: here
// the file first holds a bundle that does not sign the apiserver (every request fails TLS
// verification), then the cluster's own CA.
TEST(TokenFileTest, RewrittenInClusterCaIsUsedByTheNextConnection) {
  LS_REQUIRE_CLUSTER();
  auto admin = testing::Connect();
  ASSERT_TRUE(admin.ok()) << admin.status();
  RestClient& client = *admin->client;
  testing::TestNamespace ns(client, "kube-ca");
  ASSERT_TRUE(ns.status().ok()) << ns.status();
  ASSERT_TRUE(client.Create(resources::ServiceAccounts(), ns.name(),
                            {{"apiVersion", "v1"}, {"kind", "ServiceAccount"},
                             {"metadata", {{"name", "sa"}}}}).ok());
  auto token = RequestToken(client, ns.name(), "sa");
  ASSERT_TRUE(token.ok()) << token.status();

  // A service-account directory as the kubelet projects it.
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("sa-" + ns.name());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token", std::ios::trunc) << *token;
  std::ofstream(dir / "namespace", std::ios::trunc) << ns.name();
  std::ifstream system_bundle("/etc/ssl/certs/ca-certificates.crt");
  std::string other_ca((std::istreambuf_iterator<char>(system_bundle)),
                       std::istreambuf_iterator<char>());
  ASSERT_FALSE(other_ca.empty()) << "no system CA bundle to stand in for a foreign CA";
  std::ofstream(dir / "ca.crt", std::ios::trunc) << other_ca;
  // KUBERNETES_SERVICE_HOST/PORT from the admin kubeconfig's server, https://host:port.
  const std::string server = admin->config.server.substr(std::string("https://").size());
  const size_t colon = server.rfind(':');
  ::setenv("KUBERNETES_SERVICE_HOST", server.substr(0, colon).c_str(), 1);
  ::setenv("KUBERNETES_SERVICE_PORT", server.substr(colon + 1).c_str(), 1);
  auto config = InClusterConfig(dir);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(config.ok()) << config.status();
  auto transport = NewCurlTransport(*config);
  ASSERT_TRUE(transport.ok());
  RestClient as_pod(std::shared_ptr<Transport>(std::move(transport).value()),
                    testing::NoLimits());
  auto refused = as_pod.RawGet("/version");
  EXPECT_FALSE(refused.ok()) << "a bundle without the cluster's CA verified the apiserver";

  std::ofstream(dir / "ca.crt", std::ios::trunc) << admin->config.ca_pem;
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // re-checked once a second
  auto verified = as_pod.RawGet("/version");
  EXPECT_TRUE(verified.ok()) << verified.status();
  if (verified.ok()) {
    EXPECT_EQ(verified->status, 200);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::kube
