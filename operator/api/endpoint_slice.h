#pragma once
// The EndpointSlice of a job's headless Service `<job>`, written by the operator (docs/api.md,
// "Children"). The Service has no selector, so Kubernetes' endpoint controllers leave it alone:
// with one they rewrote the Service's Endpoints and its EndpointSlice as each pod got its address
// (about 10.5 of the operator's 35.5 API writes per job in the 500-gang burst, bench/peers),
// while the operator, which watches the pods anyway, writes the slice at most once per reconcile
// pass. What the slice says is what the endpoint controllers said for a Service with
// publishNotReadyAddresses: every pod with an address, ready or not, under its hostname, so
// cluster DNS resolves `<pod>.<job>.<ns>.svc` before the rendezvous these names are needed for.
//
// A pure function of the job and its pods' addresses; the controller compares the digest it
// computes with the one the stored slice carries (kEndpointsDigestAnnotation) and applies the
// slice only when they differ.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::api {

// The digest of the endpoints a slice was written with.
inline constexpr std::string_view kEndpointsDigestAnnotation = "lockstep.dev/endpoints-digest";
// endpointslice.kubernetes.io/managed-by (a label value: no '/'), in the form of Kubernetes' own
// "endpointslice-controller.k8s.io"; the endpoint controllers touch only their own slices.
inline constexpr std::string_view kEndpointSliceManagedBy = "lockstep-operator.lockstep.dev";

// One pod's entry: its name (also its hostname, children.h), uid, address and node.
struct PodEndpoint {
  std::string pod;
  std::string uid;
  std::string ip;
  std::string node;  // may be empty
  friend bool operator==(const PodEndpoint&, const PodEndpoint&) = default;
};

// A slice holds addresses of one family; a job whose pods have both gets one slice per family.
enum class AddressFamily { kIPv4, kIPv6 };

AddressFamily FamilyOf(std::string_view ip);  // IPv6 when the address has a ':'
// "<job>" for IPv4 (single-stack clusters: the only slice), "<job>-ipv6" for IPv6.
std::string EndpointSliceName(std::string_view job_name, AddressFamily family);

// A stable digest (16 hex digits) of `endpoints` as BuildEndpointSlice writes them: their order
// does not matter, any field of any entry does.
std::string EndpointsDigest(AddressFamily family, const std::vector<PodEndpoint>& endpoints);

// The whole slice for server-side apply: name, the job's labels and controller ownerReference
// (the garbage collector deletes it with the job), kubernetes.io/service-name, the managed-by
// label, the digest annotation; one endpoint per pod, sorted by pod name, ready and serving,
// with hostname, nodeName and targetRef; the Service's port `rdzv`. `endpoints` must all be of
// `family` (the caller splits them with FamilyOf).
nlohmann::json BuildEndpointSlice(const TrainingJob& job, AddressFamily family,
                                  std::vector<PodEndpoint> endpoints);

}  // namespace lockstep::api
