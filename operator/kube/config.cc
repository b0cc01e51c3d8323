#include "operator/kube/config.h"

#include <yaml-cpp/yaml.h>

#include <sys/stat.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>

#include "operator/kube/base64.h"

namespace lockstep::kube {
namespace {

StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path Resolve(const std::filesystem::path& base, const std::string& p) {
  std::filesystem::path path(p);
  return path.is_absolute() ? path : base / path;
}

// Reads `<key>-data` (base64) or `<key>` (a file path) from a YAML map into `out`.
Status ReadPem(const YAML::Node& node, const std::string& key, const std::filesystem::path& base,
               std::string* out) {
  if (node[key + "-data"]) {
    LS_ASSIGN_OR_RETURN(*out, Base64Decode(node[key + "-data"].as<std::string>()));
    return Status::Ok();
  }
  if (node[key]) {
    LS_ASSIGN_OR_RETURN(*out, ReadFile(Resolve(base, node[key].as<std::string>())));
  }
  return Status::Ok();
}

bool Missing(const YAML::Node& n) { return !n.IsDefined() || n.IsNull(); }

YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const std::string& field) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& entry : list) {
    if (entry["name"] && entry["name"].as<std::string>() == name) return entry[field];
  }
  return YAML::Node();
}

StatusOr<ClusterConfig> ParseKubeconfigNode(const YAML::Node& root,
                                            const std::filesystem::path& base,
                                            const std::string& context_name) {
  std::string ctx_name = context_name;
  if (ctx_name.empty()) {
    if (!root["current-context"]) return InvalidArgumentError("kubeconfig has no current-context");
    ctx_name = root["current-context"].as<std::string>();
  }
  const YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
  if (Missing(ctx)) return NotFoundError("kubeconfig context \"" + ctx_name + "\" not found");
  const std::string cluster_name = ctx["cluster"] ? ctx["cluster"].as<std::string>() : "";
  const std::string user_name = ctx["user"] ? ctx["user"].as<std::string>() : "";
  const YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
  if (Missing(cluster)) return NotFoundError("kubeconfig cluster \"" + cluster_name + "\" not found");

  ClusterConfig config;
  if (!cluster["server"]) return InvalidArgumentError("kubeconfig cluster has no server");
  config.server = cluster["server"].as<std::string>();
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>()) {
    return InvalidArgumentError("insecure-skip-tls-verify is not supported: TLS is always verified");
  }
  LS_RETURN_IF_ERROR(ReadPem(cluster, "certificate-authority", base, &config.ca_pem));
  if (ctx["namespace"]) config.default_namespace = ctx["namespace"].as<std::string>();

  const YAML::Node user = FindNamed(root["users"], user_name, "user");
  if (Missing(user)) return config;  // anonymous
  LS_RETURN_IF_ERROR(ReadPem(user, "client-certificate", base, &config.client_cert_pem));
  LS_RETURN_IF_ERROR(ReadPem(user, "client-key", base, &config.client_key_pem));
  if (user["token"]) {
    config.token = TokenSource::Static(user["token"].as<std::string>());
  } else if (user["tokenFile"]) {
    config.token = TokenSource::FromFile(Resolve(base, user["tokenFile"].as<std::string>()));
  }
  if (user["exec"] || user["auth-provider"]) {
    return UnimplementedError("kubeconfig exec/auth-provider credentials are not supported");
  }
  return config;
}

}  // namespace

std::shared_ptr<TokenSource> TokenSource::Static(std::string token) {
  std::shared_ptr<TokenSource> source(new TokenSource(RealClock::Get()));
  source->token_ = std::move(token);
  source->loaded_ = true;
  return source;
}

std::shared_ptr<TokenSource> TokenSource::FromFile(std::filesystem::path path,
                                                   std::chrono::milliseconds recheck,
                                                   const Clock& clock) {
  std::shared_ptr<TokenSource> source(new TokenSource(clock));
  source->path_ = std::move(path);
  source->recheck_ = recheck;
  return source;
}

StatusOr<std::string> TokenSource::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!path_) return token_;
  const auto now = clock_.Now();
  if (loaded_ && now < next_check_) return token_;
  next_check_ = now + recheck_;
  struct stat st {};
  if (::stat(path_->c_str(), &st) != 0) {
    // Keep serving the last good token while the file is being replaced.
    if (loaded_) return token_;
    return NotFoundError("token file " + path_->string() + " cannot be read");
  }
  const FileStamp stamp{st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
  // Timestamps tick coarsely, so a file modified in the last two seconds is re-read even when
  // its stamp looks unchanged (a same-size rewrite within one tick would be missed otherwise).
  const bool recent =
      std::chrono::system_clock::to_time_t(clock_.WallNow()) - st.st_mtim.tv_sec < 2;
  if (loaded_ && stamp == stamp_ && !recent) return token_;
  LS_ASSIGN_OR_RETURN(std::string text, ReadFile(*path_));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  token_ = std::move(text);
  stamp_ = stamp;
  loaded_ = true;
  return token_;
}

StatusOr<ClusterConfig> ParseKubeconfig(const std::string& yaml_text,
                                        const std::filesystem::path& base_dir,
                                        const std::string& context) {
  try {
    return ParseKubeconfigNode(YAML::Load(yaml_text), base_dir, context);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("kubeconfig: ") + e.what());
  }
}

StatusOr<ClusterConfig> LoadKubeconfig(const std::filesystem::path& path,
                                       const std::string& context) {
  LS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto config = ParseKubeconfig(text, path.parent_path(), context);
  if (!config.ok()) return config.status().WithContext(path.string());
  return config;
}

StatusOr<ClusterConfig> InClusterConfig(const std::filesystem::path& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') {
    return FailedPreconditionError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
  }
  ClusterConfig config;
  const std::string h(host);
  // IPv6 literals need brackets in a URL.
  config.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  // ca.crt is a projected file like the token: rewritten when the cluster's CA rotates.
  config.ca_file = TokenSource::FromFile(sa_dir / "ca.crt", std::chrono::seconds(1));
  LS_ASSIGN_OR_RETURN(config.ca_pem, config.ca_file->Token());
  // Re-checked at most once a second: cheap, and a rotated token is picked up promptly.
  config.token = TokenSource::FromFile(sa_dir / "token", std::chrono::seconds(1));
  LS_RETURN_IF_ERROR(config.token->Token().status());
  auto ns = ReadFile(sa_dir / "namespace");
  if (ns.ok() && !ns->empty()) config.default_namespace = *ns;
  return config;
}

StatusOr<ClusterConfig> LoadDefaultConfig(const std::string& explicit_path,
                                          const std::string& context) {
  if (!explicit_path.empty()) return LoadKubeconfig(explicit_path, context);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first(env);
    first = first.substr(0, first.find(':'));
    return LoadKubeconfig(first, context);
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return InClusterConfig();
  const char* home = std::getenv("HOME");
  if (home == nullptr) return NotFoundError("no kubeconfig: set KUBECONFIG or --kubeconfig");
  return LoadKubeconfig(std::filesystem::path(home) / ".kube" / "config", context);
}

}  // namespace lockstep::kube
