#include "tests/chaos/invariants.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>

namespace lockstep::chaos {
namespace {

std::string Uid(const json& object) { return object.value("/metadata/uid"_json_pointer, ""); }
std::string Name(const json& object) { return object.value("/metadata/name"_json_pointer, ""); }

// Versions per uid, each list in resourceVersion order.
std::map<std::string, std::vector<const Version*>> ByUid(const std::vector<Version>& versions) {
  std::map<std::string, std::vector<const Version*>> out;
  for (const Version& v : versions) out[Uid(v.object)].push_back(&v);
  for (auto& [uid, list] : out) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Version* a, const Version* b) { return a->rv < b->rv; });
  }
  return out;
}

// A pod's effective nvidia.com/gpu request: the larger of its containers' sum and its largest
// init container, as the schedulers count it.
int64_t GpuRequest(const json& pod) {
  const auto gpus = [](const json& container) -> int64_t {
    const json::json_pointer ptr("/resources/requests/nvidia.com~1gpu");
    if (!container.contains(ptr)) return 0;
    const json& value = container.at(ptr);
    return value.is_string() ? std::strtoll(value.get<std::string>().c_str(), nullptr, 10)
                             : value.get<int64_t>();
  };
  int64_t sum = 0;
  for (const json& c : pod.value("/spec/containers"_json_pointer, json::array())) sum += gpus(c);
  int64_t init = 0;
  for (const json& c : pod.value("/spec/initContainers"_json_pointer, json::array())) {
    init = std::max(init, gpus(c));
  }
  return std::max(sum, init);
}

std::string ControllerUid(const json& pod) {
  for (const json& ref : pod.value("/metadata/ownerReferences"_json_pointer, json::array())) {
    if (ref.value("controller", false)) return ref.value("uid", "");
  }
  return "";
}

}  // namespace

std::vector<std::string> CountersThatWentBack(const std::vector<Version>& jobs) {
  static const char* kCounters[] = {"/status/attempt", "/status/observedGeneration",
                                    "/status/restarts/failures", "/status/restarts/disruptions",
                                    "/status/restarts/inPlace"};
  std::vector<std::string> out;
  for (const auto& [uid, versions] : ByUid(jobs)) {
    for (size_t i = 1; i < versions.size(); ++i) {
      for (const char* counter : kCounters) {
        const json::json_pointer ptr(counter);
        const int64_t before = versions[i - 1]->object.value(ptr, int64_t{0});
        const int64_t after = versions[i]->object.value(ptr, int64_t{0});
        if (after < before) {
          out.push_back("job " + Name(versions[i]->object) + ": " + counter + " went from " +
                        std::to_string(before) + " to " + std::to_string(after) + " at rv " +
                        std::to_string(versions[i]->rv));
        }
      }
    }
  }
  return out;
}

PodCreations JudgePodCreations(const std::vector<Version>& jobs, const std::vector<Version>& pods,
                               const std::vector<std::pair<int64_t, int64_t>>& job_gaps) {
  const auto job_versions = ByUid(jobs);
  PodCreations out;
  for (const auto& [uid, versions] : ByUid(pods)) {
    const Version& created = *versions.front();
    if (created.listed || created.type != kube::WatchEventType::kAdded) continue;
    ++out.seen;
    if (std::any_of(job_gaps.begin(), job_gaps.end(), [&](const auto& gap) {
          return created.rv > gap.first && created.rv <= gap.second;
        })) {
      continue;
    }
    auto it = job_versions.find(ControllerUid(created.object));
    if (it == job_versions.end()) continue;  // a job the history never saw
    const Version* job = nullptr;
    for (const Version* v : it->second) {
      if (v->rv < created.rv) job = v;
    }
    if (job == nullptr) continue;
    if (job->type == kube::WatchEventType::kDeleted ||
        job->object.contains("/metadata/deletionTimestamp"_json_pointer)) {
      ++out.orphans;
      continue;
    }
    const std::string pod = Name(created.object) + " (rv " + std::to_string(created.rv) + ")";
    const std::string attempt =
        created.object.value("/metadata/labels/lockstep.dev~1attempt"_json_pointer, "?");
    const std::string state = job->object.value("/status/state"_json_pointer, "");
    const int job_attempt = job->object.value("/status/attempt"_json_pointer, 0);
    if (state == "Succeeded" || state == "Failed") {
      out.out_of_turn.push_back("pod " + pod + " created after its job ended " + state);
    } else if (attempt != std::to_string(job_attempt)) {
      out.out_of_turn.push_back("pod " + pod + " of attempt " + attempt +
                                " created while the job's status.attempt was " +
                                std::to_string(job_attempt));
    }
  }
  return out;
}

std::vector<std::string> GpusHeldTwice(
    const std::vector<Version>& pods, int64_t gpus_per_node,
    const std::vector<std::pair<int64_t, int64_t>>& pod_gaps) {
  int64_t replay_until = std::numeric_limits<int64_t>::max();
  for (const auto& gap : pod_gaps) replay_until = std::min(replay_until, gap.first);
  std::vector<const Version*> ordered;
  for (const Version& v : pods) {
    if (v.rv <= replay_until) ordered.push_back(&v);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Version* a, const Version* b) { return a->rv < b->rv; });
  std::map<std::string, std::pair<std::string, int64_t>> holding;  // uid -> (node, gpus)
  std::map<std::string, int64_t> held;                             // node -> gpus
  std::map<std::string, bool> over;  // node -> over capacity now (one line per episode)
  std::vector<std::string> out;
  for (const Version* v : ordered) {
    const std::string uid = Uid(v->object);
    if (auto it = holding.find(uid); it != holding.end()) {
      held[it->second.first] -= it->second.second;
      holding.erase(it);
    }
    const std::string node = v->object.value("/spec/nodeName"_json_pointer, "");
    const std::string phase = v->object.value("/status/phase"_json_pointer, "");
    const bool holds = v->type != kube::WatchEventType::kDeleted && !node.empty() &&
                       phase != "Succeeded" && phase != "Failed";
    if (holds) {
      const int64_t gpus = GpuRequest(v->object);
      holding[uid] = {node, gpus};
      held[node] += gpus;
    }
    for (const auto& [name, gpus] : held) {
      const bool now_over = gpus > gpus_per_node;
      if (now_over && !over[name]) {
        out.push_back("node " + name + ": " + std::to_string(gpus) + " GPUs held at rv " +
                      std::to_string(v->rv) + " (of " + std::to_string(gpus_per_node) +
                      "), the last by pod " + Name(v->object));
      }
      over[name] = now_over;
    }
  }
  return out;
}

}  // namespace lockstep::chaos
