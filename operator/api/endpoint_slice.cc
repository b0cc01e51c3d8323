#include "operator/api/endpoint_slice.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "operator/api/children.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

void SortByPod(std::vector<PodEndpoint>& endpoints) {
  std::sort(endpoints.begin(), endpoints.end(),
            [](const PodEndpoint& a, const PodEndpoint& b) { return a.pod < b.pod; });
}

// FNV-1a, 64 bits: a digest to tell "changed" from "unchanged", not a security boundary (the
// slice is the operator's own object; anyone who may write it can write any digest).
void Mix(uint64_t& h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h ^= 0xff;  // a separator no field contains: "ab","c" and "a","bc" differ
  h *= 1099511628211ULL;
}

json Endpoint(const TrainingJob& job, const PodEndpoint& e) {
  json out = {{"addresses", json::array({e.ip})},
              // publishNotReadyAddresses: peers resolve each other before they are Ready.
              {"conditions", {{"ready", true}, {"serving", true}, {"terminating", false}}},
              {"hostname", e.pod},
              {"targetRef",
               {{"kind", "Pod"},
                {"namespace", job.metadata.namespace_name},
                {"name", e.pod},
                {"uid", e.uid}}}};
  if (!e.node.empty()) out["nodeName"] = e.node;
  return out;
}

}  // namespace

AddressFamily FamilyOf(std::string_view ip) {
  return ip.find(':') == std::string_view::npos ? AddressFamily::kIPv4 : AddressFamily::kIPv6;
}

std::string EndpointSliceName(std::string_view job_name, AddressFamily family) {
  return std::string(job_name) + (family == AddressFamily::kIPv6 ? "-ipv6" : "");
}

std::string EndpointsDigest(AddressFamily family, const std::vector<PodEndpoint>& endpoints) {
  std::vector<PodEndpoint> sorted = endpoints;
  SortByPod(sorted);
  uint64_t h = 14695981039346656037ULL;
  Mix(h, family == AddressFamily::kIPv6 ? "IPv6" : "IPv4");
  for (const PodEndpoint& e : sorted) {
    for (std::string_view field : {std::string_view(e.pod), std::string_view(e.uid),
                                   std::string_view(e.ip), std::string_view(e.node)}) {
      Mix(h, field);
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

json BuildEndpointSlice(const TrainingJob& job, AddressFamily family,
                        std::vector<PodEndpoint> endpoints) {
  SortByPod(endpoints);
  json meta = ChildMetadata(job, EndpointSliceName(job.metadata.name, family));
  meta["labels"]["kubernetes.io/service-name"] = job.metadata.name;
  meta["labels"]["endpointslice.kubernetes.io/managed-by"] = kEndpointSliceManagedBy;
  meta["annotations"] = {{kEndpointsDigestAnnotation, EndpointsDigest(family, endpoints)}};
  json list = json::array();
  for (const PodEndpoint& e : endpoints) list.push_back(Endpoint(job, e));
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata", std::move(meta)},
          {"addressType", family == AddressFamily::kIPv6 ? "IPv6" : "IPv4"},
          {"endpoints", std::move(list)},
          {"ports", json::array({{{"name", "rdzv"}, {"port", kRdzvPort}, {"protocol", "TCP"}}})}};
}

}  // namespace lockstep::api
