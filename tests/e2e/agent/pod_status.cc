#include "tests/e2e/agent/pod_status.h"

#include <chrono>
#include <ctime>

namespace lockstep::e2e {

using nlohmann::json;

namespace {

json RenderContainer(const ContainerRecord& c, bool ready) {
  json state;
  switch (c.state) {
    case ContainerRecord::State::kWaiting:
      state = {{"waiting", {{"reason", c.reason}}}};
      if (!c.message.empty()) state["waiting"]["message"] = c.message;
      break;
    case ContainerRecord::State::kRunning:
      state = {{"running", {{"startedAt", c.started_at}}}};
      break;
    case ContainerRecord::State::kTerminated: {
      json t = {{"exitCode", c.exit_code}, {"reason", c.reason}, {"finishedAt", c.finished_at}};
      if (!c.started_at.empty()) t["startedAt"] = c.started_at;
      if (!c.message.empty()) t["message"] = c.message;
      if (c.signal) t["signal"] = *c.signal;
      if (!c.container_id.empty()) t["containerID"] = c.container_id;
      state = {{"terminated", std::move(t)}};
      break;
    }
  }
  json out = {{"name", c.name},
              {"image", c.image},
              {"imageID", c.image_id},
              {"ready", ready},
              {"restartCount", 0},
              {"started", c.state == ContainerRecord::State::kRunning},
              {"state", std::move(state)}};
  if (!c.container_id.empty()) out["containerID"] = c.container_id;
  return out;
}

}  // namespace

void PodRecord::SetCondition(const std::string& type, bool value, const std::string& now,
                             const std::string& why) {
  const std::string status = value ? "True" : "False";
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.time = now;
    c.status = status;
    c.reason = why;
    return;
  }
  conditions.push_back({type, status, why, now});
}

json RenderPodStatus(const PodRecord& r) {
  // No qosClass: the apiserver sets it at creation from the resources and it is immutable (a
  // pod with requests is Burstable, and writing BestEffort would fail every status patch).
  json status = {{"phase", r.phase}};
  if (!r.reason.empty()) status["reason"] = r.reason;
  if (!r.message.empty()) status["message"] = r.message;
  if (!r.host_ip.empty()) {
    status["hostIP"] = r.host_ip;
    status["hostIPs"] = json::array({{{"ip", r.host_ip}}});
  }
  if (!r.pod_ip.empty()) {
    status["podIP"] = r.pod_ip;
    status["podIPs"] = json::array({{{"ip", r.pod_ip}}});
  }
  if (!r.start_time.empty()) status["startTime"] = r.start_time;
  json conditions = json::array();
  for (const auto& c : r.conditions) {
    json cond = {{"type", c.type},
                 {"status", c.status},
                 {"lastTransitionTime", c.time},
                 {"lastProbeTime", nullptr}};
    if (!c.reason.empty()) cond["reason"] = c.reason;
    conditions.push_back(std::move(cond));
  }
  status["conditions"] = std::move(conditions);
  json init = json::array();
  for (const auto& c : r.init_containers) {
    init.push_back(
        RenderContainer(c, c.state == ContainerRecord::State::kTerminated && c.exit_code == 0));
  }
  json main = json::array();
  for (const auto& c : r.containers) {
    main.push_back(RenderContainer(c, c.state == ContainerRecord::State::kRunning));
  }
  if (!init.empty()) status["initContainerStatuses"] = std::move(init);
  status["containerStatuses"] = std::move(main);
  return status;
}

std::string NowRfc3339() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace lockstep::e2e
