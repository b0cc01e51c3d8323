#include "tests/e2e/agent/oci_runtime.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "common/log.h"
#include "tests/e2e/agent/host_command.h"
#include "tests/e2e/agent/pod_json.h"

namespace lockstep::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr size_t kMaxAccountFile = 64 * 1024;

// clang-format off
// What containerd (and Docker) give a container that asks for nothing.
const std::vector<std::string>& DefaultCapabilities() {
  static const std::vector<std::string> caps = {
      "CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
      "CAP_MKNOD", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP", "CAP_SETGID",
      "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"};
  return caps;
}

// Every capability the kernel defines, CAP_CHOWN (0) to CAP_CHECKPOINT_RESTORE (40).
const std::vector<std::string>& AllCapabilities() {
  static const std::vector<std::string> caps = {
      "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
      "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
      "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
      "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
      "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
      "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
      "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
      "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
      "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE"};
  return caps;
}
// clang-format on

std::string CapName(const std::string& k8s_name) {
  std::string upper = k8s_name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  return upper.rfind("CAP_", 0) == 0 ? upper : "CAP_" + upper;
}

// The container's securityContext field, else the pod's (for the fields both have).
json Effective(const OciContainerSpec& spec, const char* key) {
  if (spec.security.is_object() && spec.security.contains(key)) return spec.security[key];
  if (spec.pod_security.is_object() && spec.pod_security.contains(key))
    return spec.pod_security[key];
  return nullptr;
}

// A uid or gid from the pod's JSON (an integer in range), else nullopt.
std::optional<uint32_t> IdValue(const json& v) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > UINT32_MAX) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(v.get<int64_t>());
}

std::optional<uint32_t> ParseId(const std::string& text) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// The entries of an /etc/passwd (min_fields 4) or /etc/group (3) text: fields split on ':'.
std::vector<std::vector<std::string>> AccountEntries(const std::string& text, size_t min_fields) {
  std::vector<std::vector<std::string>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string f; std::getline(parts, f, ':');) fields.push_back(f);
    if (fields.size() >= min_fields) out.push_back(std::move(fields));
  }
  return out;
}

struct User {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string home = "/";
};

// The process's user as containerd picks it: runAsUser/runAsGroup, else the image's USER
// ("uid", "uid:gid", names through the image's passwd and group); without a group, the passwd
// entry's primary group, else 0.
StatusOr<User> ResolveUser(const ImageConfig& image, const OciContainerSpec& spec) {
  const auto passwd = AccountEntries(spec.passwd, 4);
  std::optional<uint32_t> uid = IdValue(Effective(spec, "runAsUser"));
  std::optional<uint32_t> gid = IdValue(Effective(spec, "runAsGroup"));
  if (!uid && !image.user.empty()) {
    const size_t colon = image.user.find(':');
    const std::string name = image.user.substr(0, colon);
    uid = ParseId(name);
    for (const auto& e : passwd) {
      if (uid) break;
      if (e[0] == name) uid = ParseId(e[2]);
    }
    if (!uid) return InvalidArgumentError("image user " + name + " is not in the image's passwd");
    if (colon != std::string::npos && !gid) {
      const std::string group = image.user.substr(colon + 1);
      gid = ParseId(group);
      for (const auto& e : AccountEntries(spec.group, 3)) {
        if (gid) break;
        if (e[0] == group) gid = ParseId(e[2]);
      }
      if (!gid)
        return InvalidArgumentError("image group " + group + " is not in the image's group");
    }
  }
  User user;
  user.uid = uid.value_or(0);
  for (const auto& e : passwd) {
    if (ParseId(e[2]) != user.uid) continue;
    if (!gid) gid = ParseId(e[3]);
    if (e.size() > 5 && !e[5].empty()) user.home = e[5];
    break;
  }
  user.gid = gid.value_or(0);
  return user;
}

std::vector<uint32_t> ExtraGroups(const OciContainerSpec& spec) {
  std::set<uint32_t> groups;
  if (spec.pod_security.is_object()) {
    for (const json& g : spec.pod_security.value("supplementalGroups", json::array())) {
      if (auto id = IdValue(g)) groups.insert(*id);
    }
    // The kubelet hands fsGroup to every container as a supplementary group.
    if (auto id = IdValue(spec.pod_security.value("fsGroup", json()))) groups.insert(*id);
  }
  return {groups.begin(), groups.end()};
}

// Kubernetes' rules: command replaces the entrypoint (and drops the image's cmd), args replace
// the cmd; $(VAR) expands against the container's env.
StatusOr<std::vector<std::string>> ProcessArgs(const ImageConfig& image,
                                               const OciContainerSpec& spec) {
  std::vector<std::string> argv = spec.command.empty() ? image.entrypoint : spec.command;
  const std::vector<std::string>& rest =
      !spec.args.empty() ? spec.args
                         : (spec.command.empty() ? image.cmd : std::vector<std::string>{});
  argv.insert(argv.end(), rest.begin(), rest.end());
  if (argv.empty()) return InvalidArgumentError("neither the pod nor the image names a command");
  for (auto& arg : argv) arg = ExpandVars(arg, spec.env);
  return argv;
}

// The image's env, the pod's over it, and what a runtime adds when missing.
std::vector<std::string> ProcessEnv(const ImageConfig& image, const OciContainerSpec& spec,
                                    const User& user) {
  EnvList env;
  auto set = [&env](const std::string& key, const std::string& value, bool override_existing) {
    for (auto& [k, v] : env) {
      if (k != key) continue;
      if (override_existing) v = value;
      return;
    }
    env.emplace_back(key, value);
  };
  for (const auto& kv : image.env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) set(kv.substr(0, eq), kv.substr(eq + 1), true);
  }
  for (const auto& [k, v] : spec.env) set(k, v, true);
  set("PATH", kDefaultPath, false);
  set("HOME", user.home, false);
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

json DefaultMounts() {
  return json::parse(R"json([
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
     "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
     "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs",
     "options": ["nosuid", "noexec", "nodev", "ro"]}])json");
}

json MaskedPaths() {
  return {"/proc/acpi",          "/proc/asound",     "/proc/kcore",       "/proc/keys",
          "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
          "/sys/firmware",       "/proc/scsi"};
}

json ReadonlyPaths() {
  return {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
}

std::string ReadAccountFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data(kMaxAccountFile, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

}  // namespace

std::vector<std::string> ContainerCapabilities(const json& security) {
  const json sc = security.is_object() ? security : json::object();
  if (sc.value("privileged", false)) return AllCapabilities();
  const json caps = sc.value("capabilities", json::object());
  std::set<std::string> drop;
  std::set<std::string> add;
  for (const std::string& c : Strings(caps, "drop")) drop.insert(CapName(c));
  for (const std::string& c : Strings(caps, "add")) add.insert(CapName(c));
  std::set<std::string> out(DefaultCapabilities().begin(), DefaultCapabilities().end());
  if (add.count("CAP_ALL") > 0) out.insert(AllCapabilities().begin(), AllCapabilities().end());
  if (drop.count("CAP_ALL") > 0) out.clear();
  for (const auto& c : add) {
    if (c != "CAP_ALL") out.insert(c);
  }
  for (const auto& c : drop) out.erase(c);
  return {out.begin(), out.end()};
}

StatusOr<json> BuildRuntimeSpec(const ImageConfig& image, const OciContainerSpec& spec,
                                const std::string& rootfs) {
  LS_ASSIGN_OR_RETURN(User user, ResolveUser(image, spec));
  if (Effective(spec, "runAsNonRoot") == json(true) && user.uid == 0) {
    return FailedPreconditionError("container has runAsNonRoot and image will run as root");
  }
  LS_ASSIGN_OR_RETURN(std::vector<std::string> argv, ProcessArgs(image, spec));
  const json sc = spec.security.is_object() ? spec.security : json::object();
  const bool privileged = sc.value("privileged", false);
  const std::vector<std::string> caps = ContainerCapabilities(sc);
  std::string cwd = !spec.working_dir.empty() ? spec.working_dir : image.working_dir;
  if (cwd.empty()) cwd = "/";

  json process = {
      {"terminal", false},
      {"user", {{"uid", user.uid}, {"gid", user.gid}}},
      {"args", argv},
      {"env", ProcessEnv(image, spec, user)},
      {"cwd", cwd},
      {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
      {"noNewPrivileges", sc.value("allowPrivilegeEscalation", true) == false},
  };
  if (const std::vector<uint32_t> extra = ExtraGroups(spec); !extra.empty()) {
    process["user"]["additionalGids"] = extra;
  }
  json mounts = DefaultMounts();
  for (const BindMount& m : spec.mounts) {
    json options = {"rbind", "rprivate"};
    if (m.read_only) options.push_back("ro");
    mounts.push_back(
        {{"destination", m.target}, {"type", "bind"}, {"source", m.source}, {"options", options}});
  }
  const std::string ns_dir = "/proc/" + std::to_string(spec.pause_pid) + "/ns/";
  json linux_section = {
      {"namespaces",
       {{{"type", "pid"}},
        {{"type", "ipc"}},
        {{"type", "mount"}},
        {{"type", "network"}, {"path", ns_dir + "net"}},
        {{"type", "uts"}, {"path", ns_dir + "uts"}}}},
      {"resources", {{"devices", {{{"allow", false}, {"access", "rwm"}}}}}},
  };
  if (!privileged) {
    linux_section["maskedPaths"] = MaskedPaths();
    linux_section["readonlyPaths"] = ReadonlyPaths();
  }
  return json{{"ociVersion", "1.0.2"},
              {"process", std::move(process)},
              {"root", {{"path", rootfs}, {"readonly", sc.value("readOnlyRootFilesystem", false)}}},
              {"mounts", std::move(mounts)},
              {"linux", std::move(linux_section)}};
}

Status OciContainer::Prepare(const StoredImage& image, const OciContainerSpec& spec) {
  std::error_code ec;
  fs::remove_all(bundle_, ec);
  fs::create_directories(bundle_, ec);
  if (ec) return InternalError("create " + bundle_ + ": " + ec.message());
  OciContainerSpec resolved = spec;
  resolved.passwd = ReadAccountFile(image.rootfs + "/etc/passwd");
  resolved.group = ReadAccountFile(image.rootfs + "/etc/group");
  const std::string rootfs = bundle_ + "/rootfs";
  LS_ASSIGN_OR_RETURN(json config, BuildRuntimeSpec(image.config, resolved, rootfs));
  // A read-only root can share the stored files (the mount keeps them unchanged); a writable one
  // gets its own copies. Directories are always the container's own: runc makes mount points.
  const bool read_only = config["root"]["readonly"].get<bool>();
  LS_RETURN_IF_ERROR(
      RunHostCommand({"cp", "-a", read_only ? "--link" : "--reflink=auto", image.rootfs, rootfs})
          .status());
  std::ofstream out(bundle_ + "/config.json", std::ios::trunc);
  out << config.dump(2);
  if (!out.flush()) return InternalError("cannot write " + bundle_ + "/config.json");
  return Status::Ok();
}

std::vector<std::string> OciContainer::RunArgv() const {
  return {"runc", "--root",   runc_root_, "--log", bundle_ + "/runc.log", "--log-format", "json",
          "run",  "--bundle", bundle_,    id_};
}

std::string OciContainer::RuntimeError() const {
  std::ifstream in(bundle_ + "/runc.log");
  std::string error;
  for (std::string line; std::getline(in, line);) {
    const json entry = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_object() && entry.value("level", "") == "error") error = entry.value("msg", "");
  }
  return error;
}

void OciContainer::Remove() {
  // Fails harmlessly when runc never created the container or already deleted it.
  RunHostCommand({"runc", "--root", runc_root_, "delete", "--force", id_}).status().IgnoreError();
  std::error_code ec;
  fs::remove_all(bundle_ + "/rootfs", ec);
}

void RemoveStaleContainers(const std::string& runc_root, const std::string& prefix) {
  std::error_code ec;
  if (!fs::is_directory(runc_root, ec)) return;
  StatusOr<std::string> ids = RunHostCommand({"runc", "--root", runc_root, "list", "-q"});
  if (!ids.ok()) return;
  std::istringstream lines(*ids);
  for (std::string id; std::getline(lines, id);) {
    if (id.rfind(prefix, 0) != 0) continue;
    log::Warning("removing a stale runc container", {{"id", id}});
    // Said, not swallowed: e2e.images once found such a container still there after the
    // restart (a dead agent's, SIGKILLed while it may have been deleting it).
    if (Status deleted =
            RunHostCommand({"runc", "--root", runc_root, "delete", "--force", id}).status();
        !deleted.ok()) {
      log::Error("could not remove a stale runc container",
                 {{"id", id}, {"error", deleted.ToString()}});
    }
  }
}

}  // namespace lockstep::e2e
