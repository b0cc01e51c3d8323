#include "operator/controller/endpoint_plan.h"

namespace lockstep::controller {

std::vector<api::PodEndpoint> ServiceEndpoints(const std::vector<kube::Pod>& pods) {
  std::vector<api::PodEndpoint> out;
  for (const kube::Pod& pod : pods) {
    if (pod.pod_ip.empty() || pod.IsTerminal() || pod.meta.deletion_timestamp) continue;
    out.push_back({pod.meta.name, pod.meta.uid, pod.pod_ip, pod.node_name});
  }
  return out;
}

std::vector<nlohmann::json> PlanEndpointSlices(const api::TrainingJob& job,
                                               const std::vector<kube::Pod>& pods,
                                               const std::map<std::string, std::string>& stored) {
  std::map<api::AddressFamily, std::vector<api::PodEndpoint>> by_family = {
      {api::AddressFamily::kIPv4, {}}, {api::AddressFamily::kIPv6, {}}};
  for (api::PodEndpoint& e : ServiceEndpoints(pods)) {
    by_family[api::FamilyOf(e.ip)].push_back(std::move(e));
  }
  std::vector<nlohmann::json> out;
  for (auto& [family, endpoints] : by_family) {
    const auto it = stored.find(api::EndpointSliceName(job.metadata.name, family));
    if (it == stored.end() && endpoints.empty()) continue;
    if (it != stored.end() && it->second == api::EndpointsDigest(family, endpoints)) continue;
    out.push_back(api::BuildEndpointSlice(job, family, std::move(endpoints)));
  }
  return out;
}

}  // namespace lockstep::controller
