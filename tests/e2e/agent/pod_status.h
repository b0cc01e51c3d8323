#pragma once
// What the agent knows about a running pod, and its rendering as a kubelet-style PodStatus.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::e2e {

struct ContainerRecord {
  enum class State { kWaiting, kRunning, kTerminated };
  std::string name;
  std::string image;
  State state = State::kWaiting;
  std::string reason = "PodInitializing";  // waiting: PodInitializing, ContainerCreating, ...
  std::string message;
  int exit_code = 0;
  std::optional<int> signal;
  std::string started_at;
  std::string finished_at;
  std::string container_id;  // agent://<pid>, or runc://<id> for a container from the store
  std::string image_id;      // <repository>@<manifest digest> for a container from the store
};

inline ContainerRecord NewContainerRecord(std::string name, std::string image) {
  ContainerRecord r;
  r.name = std::move(name);
  r.image = std::move(image);
  return r;
}

struct PodRecord {
  std::string phase = "Pending";
  std::string reason;
  std::string message;
  std::string pod_ip;
  std::string host_ip;
  std::string start_time;
  std::vector<ContainerRecord> init_containers;
  std::vector<ContainerRecord> containers;
  // Condition type -> (status, lastTransitionTime), kept so transitions carry their own time.
  struct Cond {
    std::string type;
    std::string status;
    std::string reason;
    std::string time;
  };
  std::vector<Cond> conditions;

  // Sets a condition, updating its transition time only when the status changes.
  void SetCondition(const std::string& type, bool value, const std::string& now,
                    const std::string& reason = "");
};

// The `status` object for PATCH pods/<name>/status.
nlohmann::json RenderPodStatus(const PodRecord& record);

// RFC 3339 seconds, UTC, as the kubelet writes them.
std::string NowRfc3339();

}  // namespace lockstep::e2e
