#include "tests/e2e/agent/pod_volumes.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "operator/kube/base64.h"
#include "tests/e2e/agent/pod_json.h"

namespace lockstep::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

Status WriteHostFile(const std::string& path, const std::string& data, int mode) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  if (!out) return InternalError("cannot write " + path);
  if (chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return InternalError("chmod " + path);
  }
  return Status::Ok();
}

PodVolumes::PodVolumes(kube::RestClient& client, StateDir& state, json pod, std::string dir,
                       PodRuntimeFields rt)
    : client_(client),
      state_(state),
      pod_(std::move(pod)),
      ns_(Str(pod_, "/metadata/namespace")),
      name_(Str(pod_, "/metadata/name")),
      uid_(Str(pod_, "/metadata/uid")),
      dir_(std::move(dir)),
      rt_(std::move(rt)) {}

StatusOr<std::map<std::string, std::string>> FetchConfigData(kube::RestClient& client,
                                                             const std::string& ns,
                                                             const std::string& kind,
                                                             const std::string& name) {
  const bool secret = kind == "Secret";
  LS_ASSIGN_OR_RETURN(
      json obj,
      client.Get(secret ? kube::resources::Secrets() : kube::resources::ConfigMaps(), ns, name));
  std::map<std::string, std::string> out;
  const json data = obj.value("data", json::object());
  for (auto it = data.begin(); it != data.end(); ++it) {
    if (!it.value().is_string()) continue;
    if (secret) {
      LS_ASSIGN_OR_RETURN(out[it.key()], kube::Base64Decode(it.value().get<std::string>()));
    } else {
      out[it.key()] = it.value().get<std::string>();
    }
  }
  if (!secret) {
    const json binary = obj.value("binaryData", json::object());
    for (auto it = binary.begin(); it != binary.end(); ++it) {
      if (!it.value().is_string()) continue;
      LS_ASSIGN_OR_RETURN(out[it.key()], kube::Base64Decode(it.value().get<std::string>()));
    }
  }
  return out;
}

Status PodVolumes::WriteKeyFiles(const std::string& dir, const json& src,
                                 const std::map<std::string, std::string>& data, int default_mode) {
  std::vector<std::tuple<std::string, std::string, int>> files;  // key, relative path, mode
  const json items = Array(src, "items");
  for (const json& item : items) {
    files.emplace_back(item.value("key", ""), item.value("path", ""),
                       item.value("mode", default_mode));
  }
  if (items.empty()) {
    for (const auto& [key, value] : data) files.emplace_back(key, key, default_mode);
  }
  for (const auto& [key, rel, mode] : files) {
    auto it = data.find(key);
    if (it == data.end()) {
      if (src.value("optional", false)) continue;
      return NotFoundError("no key " + key);
    }
    LS_RETURN_IF_ERROR(WriteVolumeFile(dir, rel, it->second, mode));
  }
  return Status::Ok();
}

Status PodVolumes::WriteVolumeFile(const std::string& dir, const std::string& rel,
                                   const std::string& data, int mode) {
  if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos) {
    return InvalidArgumentError("bad volume file path " + rel);
  }
  std::error_code ec;
  fs::create_directories(fs::path(dir + "/" + rel).parent_path(), ec);
  return WriteHostFile(dir + "/" + rel, data, mode);
}

Status PodVolumes::WriteObjectSource(const std::string& dir, const std::string& kind,
                                     const json& src, int default_mode) {
  const std::string object =
      src.value(kind == "Secret" ? "secretName" : "name", src.value("name", ""));
  StatusOr<std::map<std::string, std::string>> data = FetchConfigData(client_, ns_, kind, object);
  if (!data.ok()) {
    if (src.value("optional", false) && IsNotFound(data.status())) return Status::Ok();
    return data.status();
  }
  return WriteKeyFiles(dir, src, *data, default_mode);
}

Status PodVolumes::WriteDownwardApi(const std::string& dir, const json& src, int default_mode) {
  const json& pod = pod_;
  for (const json& item : Array(src, "items")) {
    if (!item.contains("fieldRef")) {
      return UnimplementedError("downwardAPI: only fieldRef items are supported");
    }
    LS_ASSIGN_OR_RETURN(std::string value,
                        ResolveFieldPath(pod, rt_, item["fieldRef"].value("fieldPath", "")));
    LS_RETURN_IF_ERROR(
        WriteVolumeFile(dir, item.value("path", ""), value, item.value("mode", default_mode)));
  }
  return Status::Ok();
}

// A bound service-account token from the TokenRequest API, as the kubelet projects it.
Status PodVolumes::WriteServiceAccountToken(const std::string& dir, const json& src,
                                            int default_mode) {
  const json& pod = pod_;
  std::string account = Str(pod, "/spec/serviceAccountName");
  if (account.empty()) account = "default";
  json spec = {
      {"expirationSeconds", src.value("expirationSeconds", int64_t{3600})},
      {"boundObjectRef", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", name_}, {"uid", uid_}}}};
  if (src.contains("audience")) spec["audiences"] = json::array({src["audience"]});
  const json request = {{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec", std::move(spec)}};
  LS_ASSIGN_OR_RETURN(json response, client_.CreateSubresource(kube::resources::ServiceAccounts(),
                                                               ns_, account, "token", request));
  return WriteVolumeFile(dir, src.value("path", "token"), Str(response, "/status/token"),
                         src.value("mode", default_mode));
}

Status PodVolumes::PrepareVolume(const json& v, const std::string& dir) {
  if (v.contains("emptyDir")) {
    // World-writable as the kubelet makes it: containers may run as any user.
    std::error_code ec;
    fs::permissions(dir, fs::perms::all, ec);
    if (ec) return InternalError("chmod " + dir + ": " + ec.message());
    return Status::Ok();
  }
  if (v.contains("secret")) {
    return WriteObjectSource(dir, "Secret", v["secret"], v["secret"].value("defaultMode", 0644));
  }
  if (v.contains("configMap")) {
    return WriteObjectSource(dir, "ConfigMap", v["configMap"],
                             v["configMap"].value("defaultMode", 0644));
  }
  if (v.contains("downwardAPI")) {
    return WriteDownwardApi(dir, v["downwardAPI"], v["downwardAPI"].value("defaultMode", 0644));
  }
  if (v.contains("projected")) {
    const int mode = v["projected"].value("defaultMode", 0644);
    for (const json& source : Array(v["projected"], "sources")) {
      if (source.contains("secret")) {
        LS_RETURN_IF_ERROR(WriteObjectSource(dir, "Secret", source["secret"], mode));
      } else if (source.contains("configMap")) {
        LS_RETURN_IF_ERROR(WriteObjectSource(dir, "ConfigMap", source["configMap"], mode));
      } else if (source.contains("downwardAPI")) {
        LS_RETURN_IF_ERROR(WriteDownwardApi(dir, source["downwardAPI"], mode));
      } else if (source.contains("serviceAccountToken")) {
        LS_RETURN_IF_ERROR(WriteServiceAccountToken(dir, source["serviceAccountToken"], mode));
      } else {
        return UnimplementedError("unsupported projected volume source " + source.dump());
      }
    }
    return Status::Ok();
  }
  return UnimplementedError(
      "only emptyDir, secret, configMap, downwardAPI, projected and "
      "hostPath volumes are supported by the test node agent");
}

Status CheckHostPath(const std::string& path, const std::string& type) {
  std::error_code ec;
  if (type == "DirectoryOrCreate") {
    fs::create_directories(path, ec);
    if (ec) return InternalError("create " + path + ": " + ec.message());
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec, ec);
    return Status::Ok();
  }
  if (type == "FileOrCreate") {
    if (!fs::exists(path, ec)) {
      std::FILE* f = std::fopen(path.c_str(), "a");
      if (f == nullptr) return InternalError("create " + path);
      std::fclose(f);
    }
    return Status::Ok();
  }
  if (type == "Directory" && !fs::is_directory(path, ec)) {
    return FailedPreconditionError("hostPath " + path + " is not a directory");
  }
  if (type == "File" && !fs::is_regular_file(path, ec)) {
    return FailedPreconditionError("hostPath " + path + " is not a file");
  }
  if (!type.empty() && type != "Directory" && type != "File") {
    return UnimplementedError("hostPath type " + type + " is not supported by the test node agent");
  }
  return Status::Ok();
}

StatusOr<VolumeDirs> PodVolumes::Prepare() {
  VolumeDirs volume_dirs;
  const json& pod = pod_;
  for (const json& v : Array(pod.value("spec", json::object()), "volumes")) {
    const std::string name = v.value("name", "");
    if (v.contains("hostPath")) {
      const std::string path = Str(v, "/hostPath/path");
      LS_RETURN_IF_ERROR(
          CheckHostPath(path, Str(v, "/hostPath/type")).WithContext("volume " + name));
      volume_dirs[name] = path;
      continue;
    }
    const std::string dir = dir_ + "/volumes/" + name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return InternalError("create " + dir + ": " + ec.message());
    volume_dirs[name] = dir;
    LS_RETURN_IF_ERROR(PrepareVolume(v, dir).WithContext("volume " + name));
  }
  return volume_dirs;
}

namespace {

// Creates `rel` (starting with '/') under `root`: a mount target inside the pod's own /tmp,
// which goes away with the pod's state dir.
Status EnsurePathIn(const std::string& root, const std::string& rel, bool file) {
  const fs::path target = fs::path(root + rel);
  std::error_code ec;
  fs::create_directories(file ? target.parent_path() : target, ec);
  if (ec) return InternalError("mkdir " + target.string() + ": " + ec.message());
  if (file && !fs::exists(target, ec)) {
    std::ofstream create(target);
    if (!create) return InternalError("create " + target.string());
  }
  return Status::Ok();
}

// The existing paths of `paths` under /tmp, without those inside another of them (the outer
// bind carries them; a symlink inside it still points where it did).
std::vector<std::string> KeptHostPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> under_tmp;
  for (const std::string& raw : paths) {
    const std::string path = fs::path(raw).lexically_normal().string();
    std::error_code ec;
    if (path.rfind("/tmp/", 0) == 0 && fs::exists(path, ec)) under_tmp.push_back(path);
  }
  std::vector<std::string> kept;
  for (const std::string& path : under_tmp) {
    bool inside = false;
    for (const std::string& other : under_tmp) {
      if (other != path && path.rfind(other + "/", 0) == 0) inside = true;
    }
    if (!inside && std::find(kept.begin(), kept.end(), path) == kept.end()) kept.push_back(path);
  }
  return kept;
}

}  // namespace

StatusOr<std::vector<BindMount>> ContainerMounts(const json& container, const VolumeDirs& dirs) {
  std::vector<BindMount> mounts;
  for (const json& m : Array(container, "volumeMounts")) {
    const std::string volume = m.value("name", "");
    auto dir = dirs.find(volume);
    if (dir == dirs.end()) return InvalidArgumentError("volumeMount of unknown volume " + volume);
    std::string source = dir->second;
    const std::string sub = m.value("subPath", "");
    if (!sub.empty()) {
      if (sub[0] == '/' || sub.find("..") != std::string::npos) {
        return InvalidArgumentError("bad subPath " + sub);
      }
      source += "/" + sub;
      std::error_code ec;
      if (!fs::exists(source, ec)) fs::create_directories(source, ec);
    }
    const std::string target = m.value("mountPath", "");
    if (target.empty() || target[0] != '/') {
      return InvalidArgumentError("mountPath must be absolute: " + target);
    }
    mounts.push_back({source, target, m.value("readOnly", false)});
  }
  return mounts;
}

StatusOr<std::vector<BindMount>> PodVolumes::Mounts(
    const VolumeDirs& dirs, const std::function<bool(const json&)>& wanted,
    const std::vector<std::string>& host_paths) {
  // One filesystem view per pod: the union of its host-process containers' volumeMounts.
  const json& pod = pod_;
  const json spec = pod.value("spec", json::object());
  std::map<std::string, BindMount> by_target;
  for (const char* list : {"initContainers", "containers"}) {
    for (const json& c : Array(spec, list)) {
      if (!wanted(c)) continue;
      LS_ASSIGN_OR_RETURN(std::vector<BindMount> own, ContainerMounts(c, dirs));
      for (const BindMount& mount : own) {
        auto [it, inserted] = by_target.emplace(mount.target, mount);
        if (!inserted) {
          if (it->second.source != mount.source) {
            return InvalidArgumentError("two volumes mounted at " + mount.target +
                                        " (the agent gives a pod one filesystem view)");
          }
          it->second.read_only = it->second.read_only && mount.read_only;
        }
      }
    }
  }
  // Every pod has its own /tmp, as a container's writable layer gives it, unless a volume is
  // mounted there. Pods sharing the host's /tmp saw each other's files: Ray keeps the address
  // of the last cluster any process on the machine joined in /tmp/ray, and one Ray job's
  // internals connected to another job's cluster.
  const std::string own_tmp = dir_ + "/tmp";
  const bool private_tmp = by_target.count("/tmp") == 0;
  if (private_tmp) {
    std::error_code ec;
    fs::create_directories(own_tmp, ec);
    fs::permissions(own_tmp, fs::perms::all | fs::perms::sticky_bit, ec);
    if (ec) return InternalError("create the pod's /tmp " + own_tmp + ": " + ec.message());
    by_target.emplace("/tmp", BindMount{own_tmp, "/tmp", false});
    for (const std::string& path : KeptHostPaths(host_paths)) {
      by_target.emplace(path, BindMount{path, path, false});  // a volume there wins
    }
  }
  std::vector<BindMount> mounts;
  for (auto& [target, mount] : by_target) {
    std::error_code ec;
    const bool file = !fs::is_directory(mount.source, ec);
    if (private_tmp && target.rfind("/tmp/", 0) == 0) {
      LS_RETURN_IF_ERROR(EnsurePathIn(own_tmp, target.substr(4), file));
    } else {
      LS_RETURN_IF_ERROR(state_.EnsurePath(target, file));  // "/tmp" itself exists: a no-op
    }
    mounts.push_back(mount);  // std::map order: a parent path sorts before its children
  }
  return mounts;
}

}  // namespace lockstep::e2e
