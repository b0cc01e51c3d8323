#include "operator/kube/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace lockstep::kube {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kube-config-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  }
  fs::path dir_;
};

// "CA-PEM" / "CERT" / "KEY" in base64.
constexpr const char* kKubeconfig = R"(
apiVersion: v1
kind: Config
current-context: admin
contexts:
- name: admin
  context: {cluster: local, user: admin, namespace: team-a}
- name: robot
  context: {cluster: local, user: robot}
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: robot
  user:
    tokenFile: robot.token
)";

TEST_F(ConfigTest, CurrentContextWithInlineCertificates) {
  auto c = ParseKubeconfig(kKubeconfig, dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->token, nullptr);
  EXPECT_EQ(c->default_namespace, "team-a");
}

TEST_F(ConfigTest, NamedContextWithRelativeTokenFileReReadOnChange) {
  Write(dir_ / "robot.token", "token-a\n");
  auto c = ParseKubeconfig(kKubeconfig, dir_, "robot");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_NE(c->token, nullptr);
  EXPECT_EQ(*c->token->Token(), "token-a");
  Write(dir_ / "robot.token", "token-bb");  // a different size, so no mtime granularity issue
  EXPECT_EQ(*c->token->Token(), "token-bb");
  // Replaced by rename, as the kubelet does (atomic writer).
  Write(dir_ / "robot.token.new", "token-cc");
  fs::rename(dir_ / "robot.token.new", dir_ / "robot.token");
  EXPECT_EQ(*c->token->Token(), "token-cc");
}

TEST_F(ConfigTest, CertificateFilesResolveAgainstKubeconfigDir) {
  Write(dir_ / "ca.crt", "CA-FILE");
  Write(dir_ / "kubeconfig", R"(
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority: ca.crt}}]
users: [{name: u, user: {token: static-token}}]
)");
  auto c = LoadKubeconfig(dir_ / "kubeconfig");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "CA-FILE");
  EXPECT_EQ(*c->token->Token(), "static-token");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST_F(ConfigTest, Errors) {
  EXPECT_TRUE(IsNotFound(ParseKubeconfig(kKubeconfig, dir_, "nope").status()));
  EXPECT_TRUE(IsInvalidArgument(ParseKubeconfig("{{{", dir_).status()));
  EXPECT_TRUE(IsInvalidArgument(ParseKubeconfig(R"(
current-context: c
contexts: [{name: c, context: {cluster: k}}]
clusters: [{name: k, cluster: {server: "https://h:1", insecure-skip-tls-verify: true}}]
)", dir_).status()));
  EXPECT_FALSE(LoadKubeconfig(dir_ / "missing").ok());
  // A missing referenced file is an error, not silently no TLS material.
  EXPECT_FALSE(ParseKubeconfig(R"(
current-context: c
contexts: [{name: c, context: {cluster: k}}]
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority: nope.crt}}]
)", dir_).ok());
}

TEST_F(ConfigTest, InClusterReadsServiceAccountDir) {
  Write(dir_ / "token", "sa-token-1");
  Write(dir_ / "ca.crt", "SA-CA");
  Write(dir_ / "namespace", "lockstep-system");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = InClusterConfig(dir_);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:443");
  EXPECT_EQ(c->ca_pem, "SA-CA");
  EXPECT_EQ(c->default_namespace, "lockstep-system");
  EXPECT_EQ(*c->token->Token(), "sa-token-1");
  Write(dir_ / "token", "sa-token-rotated");
  // In-cluster tokens are re-checked at most once a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(*c->token->Token(), "sa-token-rotated");
  // ca.crt too (issue 18): a rotated cluster CA is picked up without a restart.
  ASSERT_NE(c->ca_file, nullptr);
  EXPECT_EQ(*c->ca_file->Token(), "SA-CA");
  Write(dir_ / "ca.crt", "SA-CA-ROTATED");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(*c->ca_file->Token(), "SA-CA-ROTATED");
}

TEST_F(ConfigTest, InClusterNeedsEnvironment) {
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_FALSE(InClusterConfig(dir_).ok());
}

}  // namespace
}  // namespace lockstep::kube
