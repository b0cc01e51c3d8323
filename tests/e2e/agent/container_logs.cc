#include "tests/e2e/agent/container_logs.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <vector>

#include "tests/e2e/agent/pod_json.h"

namespace lockstep::e2e {
namespace {

constexpr std::string_view kPrefix = "/containerLogs/";

// A DNS label or subdomain as Kubernetes names namespaces, pods and containers: nothing that
// could walk out of the state dir.
bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return s != "." && s != ".." && s.front() != '.';
}

StatusOr<bool> ParseBool(std::string_view key, std::string_view v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0" || v.empty()) return false;
  return InvalidArgumentError(std::string(key) + ": not a boolean: " + std::string(v));
}

StatusOr<int64_t> ParsePositive(std::string_view key, std::string_view v) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0) {
    return InvalidArgumentError(std::string(key) +
                                ": not a non-negative integer: " + std::string(v));
  }
  return n;
}

Status ApplyQueryParameter(std::string_view key, std::string_view value, ContainerLogRequest* r) {
  if (key == "follow") {
    LS_ASSIGN_OR_RETURN(r->follow, ParseBool(key, value));
  } else if (key == "previous") {
    LS_ASSIGN_OR_RETURN(r->previous, ParseBool(key, value));
  } else if (key == "timestamps") {
    LS_ASSIGN_OR_RETURN(r->timestamps, ParseBool(key, value));
  } else if (key == "tailLines") {
    LS_ASSIGN_OR_RETURN(r->tail_lines, ParsePositive(key, value));
  } else if (key == "limitBytes") {
    LS_ASSIGN_OR_RETURN(int64_t n, ParsePositive(key, value));
    if (n == 0) return InvalidArgumentError("limitBytes: must be greater than 0");
    r->limit_bytes = n;
  }
  // sinceSeconds, sinceTime and anything newer: accepted and not applied (no timestamps here).
  return Status::Ok();
}

}  // namespace

StatusOr<ContainerLogRequest> ParseContainerLogTarget(std::string_view target) {
  const size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  if (path.substr(0, kPrefix.size()) != kPrefix) {
    return NotFoundError("no such endpoint: " + std::string(path));
  }
  path.remove_prefix(kPrefix.size());
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  if (parts.size() != 3 || !ValidName(parts[0]) || !ValidName(parts[1]) || !ValidName(parts[2])) {
    return NotFoundError("expected /containerLogs/<namespace>/<pod>/<container>");
  }
  ContainerLogRequest r;
  r.ns = parts[0];
  r.pod = parts[1];
  r.container = parts[2];
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    LS_RETURN_IF_ERROR(ApplyQueryParameter(
        pair.substr(0, eq), eq == std::string_view::npos ? "" : pair.substr(eq + 1), &r));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return r;
}

std::optional<int64_t> TailStart(std::string_view tail, int64_t base, int64_t lines) {
  if (lines <= 0) return base + static_cast<int64_t>(tail.size());
  size_t end = tail.size();
  if (end > 0 && tail[end - 1] == '\n') --end;  // the last line's own newline
  int64_t seen = 0;
  for (size_t i = end; i > 0; --i) {
    if (tail[i - 1] == '\n' && ++seen == lines) return base + static_cast<int64_t>(i);
  }
  if (base == 0) return 0;  // the whole file has fewer lines
  return std::nullopt;
}

StatusOr<int64_t> TailStartOfFile(const std::string& path, int64_t lines) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFoundError("cannot open " + path);
  const int64_t size = in.tellg();
  for (int64_t block = 64 * 1024;; block *= 4) {
    const int64_t base = std::max<int64_t>(0, size - block);
    std::string tail(static_cast<size_t>(size - base), '\0');
    in.seekg(base);
    in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
    if (!in) return InternalError("cannot read " + path);
    if (std::optional<int64_t> start = TailStart(tail, base, lines)) return *start;
  }
}

bool PodHasContainer(const nlohmann::json& pod, const std::string& container) {
  const nlohmann::json spec = pod.value("spec", nlohmann::json::object());
  for (const char* list : {"initContainers", "containers"}) {
    for (const nlohmann::json& c : Array(spec, list)) {
      if (Str(c, "/name") == container) return true;
    }
  }
  return false;
}

bool ContainerStillRunning(const nlohmann::json& pod, const std::string& container) {
  const std::string phase = Str(pod, "/status/phase");
  if (phase == "Succeeded" || phase == "Failed") return false;
  const nlohmann::json status = pod.value("status", nlohmann::json::object());
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    for (const nlohmann::json& c : Array(status, list)) {
      if (Str(c, "/name") != container) continue;
      return !(c.contains("state") && c["state"].is_object() && c["state"].contains("terminated"));
    }
  }
  return true;
}

}  // namespace lockstep::e2e
