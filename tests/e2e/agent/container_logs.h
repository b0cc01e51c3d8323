#pragma once
// The kubelet's container-log request as the apiserver sends it when it proxies `kubectl logs`
// (GET /containerLogs/<namespace>/<pod>/<container>?follow=..&tailLines=..&limitBytes=..), and
// where in a log file such a request starts. Pure: no sockets, no cluster.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::e2e {

struct ContainerLogRequest {
  std::string ns;
  std::string pod;
  std::string container;
  bool follow = false;
  std::optional<int64_t> tail_lines;   // the last N lines only
  std::optional<int64_t> limit_bytes;  // at most this many bytes
  bool previous = false;               // a previous instance: never exists here (no restarts)
  bool timestamps = false;             // not recorded by the agent: lines come without them
};

// Parses a request target ("/containerLogs/ns/pod/c?follow=true"). INVALID_ARGUMENT (the
// server's 400) for a malformed query; NOT_FOUND (404) for another path.
StatusOr<ContainerLogRequest> ParseContainerLogTarget(std::string_view target);

// The offset in `tail` at which its last `lines` lines start, where a final newline ends a line
// and does not start another. `tail` is the end of a file whose first byte is at `base`; the
// result is a file offset. Returns nullopt when `tail` holds fewer lines and more of the file
// precedes it (base > 0): the caller reads a larger tail.
std::optional<int64_t> TailStart(std::string_view tail, int64_t base, int64_t lines);

// The file offset where the last `lines` lines of the file at `path` start (0 for a shorter
// file), reading backwards in growing blocks.
StatusOr<int64_t> TailStartOfFile(const std::string& path, int64_t lines);

// Whether the pod's spec names `container` (an init container or a container).
bool PodHasContainer(const nlohmann::json& pod, const std::string& container);

// Whether `container` may still write to its log, as far as the pod's status says: not once it
// is terminated or the pod is finished.
bool ContainerStillRunning(const nlohmann::json& pod, const std::string& container);

}  // namespace lockstep::e2e
