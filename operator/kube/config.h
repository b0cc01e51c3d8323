#pragma once
// Connection settings for one API server: kubeconfig files and in-cluster service-account config.
// TLS verification is always on; there is deliberately no "insecure" switch.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace lockstep::kube {

// Returns the current bearer token. A token read from a file is re-read whenever the file's
// modification time or size changes (bound service-account tokens are rotated by the kubelet),
// checked at most once per `recheck` interval. Thread-safe. Never log the token. The in-cluster
// CA bundle (ca.crt, which the kubelet also rewrites when the cluster's CA rotates) is read
// through one as well. `clock` (which outlives the source) times the rechecks.
class TokenSource {
 public:
  static std::shared_ptr<TokenSource> Static(std::string token);
  static std::shared_ptr<TokenSource> FromFile(
      std::filesystem::path path, std::chrono::milliseconds recheck = std::chrono::milliseconds(0),
      const Clock& clock = RealClock::Get());
  // Empty when there is no token (e.g. client-certificate auth).
  StatusOr<std::string> Token();

 private:
  explicit TokenSource(const Clock& clock) : clock_(clock) {}
  const Clock& clock_;
  std::mutex mu_;
  std::string token_;
  std::optional<std::filesystem::path> path_;
  std::chrono::milliseconds recheck_{0};
  std::chrono::steady_clock::time_point next_check_{};
  struct FileStamp {
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_sec = 0;
    int64_t mtime_nsec = 0;
    bool operator==(const FileStamp&) const = default;
  };
  FileStamp stamp_;
  bool loaded_ = false;
};

struct ClusterConfig {
  std::string server;           // https://host:port, no trailing slash
  std::string ca_pem;           // PEM bundle used to verify the server; empty = system store
  // When set, the PEM bundle is this file's current content, re-read like the token (in-cluster
  // ca.crt); it takes the place of ca_pem.
  std::shared_ptr<TokenSource> ca_file;
  std::string client_cert_pem;  // client certificate (PEM), empty when unused
  std::string client_key_pem;   // client private key (PEM), empty when unused
  std::shared_ptr<TokenSource> token;  // null when unused
  std::string default_namespace = "default";
};

// Loads a kubeconfig file. `context` empty means current-context. Relative file paths inside the
// kubeconfig are resolved against the kubeconfig's directory, like kubectl does.
StatusOr<ClusterConfig> LoadKubeconfig(const std::filesystem::path& path,
                                       const std::string& context = "");
// Parses kubeconfig text (`base_dir` resolves relative paths).
StatusOr<ClusterConfig> ParseKubeconfig(const std::string& yaml_text,
                                        const std::filesystem::path& base_dir,
                                        const std::string& context = "");

// In-cluster config from KUBERNETES_SERVICE_HOST/PORT and the service-account directory
// (token, ca.crt, namespace). `sa_dir` is overridable for tests.
StatusOr<ClusterConfig> InClusterConfig(
    const std::filesystem::path& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The usual resolution order: an explicit path (a --kubeconfig flag), else $KUBECONFIG (first
// entry of a ':'-separated list), else in-cluster when KUBERNETES_SERVICE_HOST is set, else
// ~/.kube/config.
StatusOr<ClusterConfig> LoadDefaultConfig(const std::string& explicit_path = "",
                                          const std::string& context = "");

}  // namespace lockstep::kube
