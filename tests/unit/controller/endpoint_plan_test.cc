#include "operator/controller/endpoint_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::Job;
using testing::Pod;
using testing::T0;

kube::Pod WithIp(kube::Pod p, const std::string& ip) {
  p.pod_ip = ip;
  return p;
}

std::vector<std::string> Names(const std::vector<api::PodEndpoint>& endpoints) {
  std::vector<std::string> out;
  for (const api::PodEndpoint& e : endpoints) out.push_back(e.pod);
  return out;
}

TEST(ServiceEndpointsTest, EveryLivePodWithAnAddress) {
  const std::vector<kube::Pod> pods = {
      WithIp(Pod("worker", 0, "Running"), "10.0.0.1"),
      Pod("worker", 1, "Pending"),                                   // no address yet
      WithIp(Pod("worker", 2, "Pending"), "10.0.0.3"),               // init containers running
      WithIp(Pod("worker", 3, "Failed"), "10.0.0.4"),                // terminal
      testing::Terminating(WithIp(Pod("worker", 4, "Running"), "10.0.0.5")),  // going
      testing::InAttempt(WithIp(Pod("worker", 5, "Running"), "10.0.0.6"), 7),  // another attempt
  };
  const std::vector<api::PodEndpoint> got = ServiceEndpoints(pods);
  EXPECT_EQ(Names(got), (std::vector<std::string>{"job-worker-0", "job-worker-2", "job-worker-5"}));
  EXPECT_EQ(got[0], (api::PodEndpoint{"job-worker-0", "pod-uid-worker0", "10.0.0.1", "node-1"}));
}

// Which families a pass applies, from the pods and what the cache holds.
TEST(PlanEndpointSlicesTest, AppliesOnlyWhatChanged) {
  const CachedJob job = Job(2);
  const std::vector<kube::Pod> v4 = {WithIp(Pod("worker", 0, "Running"), "10.0.0.1"),
                                     WithIp(Pod("worker", 1, "Running"), "10.0.0.2")};
  const std::string v4_digest = api::EndpointsDigest(api::AddressFamily::kIPv4,
                                                     ServiceEndpoints(v4));
  const std::string empty_v4 = api::EndpointsDigest(api::AddressFamily::kIPv4, {});
  const std::vector<kube::Pod> mixed = {WithIp(Pod("worker", 0, "Running"), "10.0.0.1"),
                                        WithIp(Pod("worker", 1, "Running"), "fd00::2")};
  struct Case {
    std::string name;
    std::vector<kube::Pod> pods;
    std::map<std::string, std::string> stored;
    std::vector<std::string> applied;  // slice names
  };
  const std::vector<Case> cases = {
      {"no address, no slice: nothing", {Pod("worker", 0, "Pending")}, {}, {}},
      {"first addresses: the slice", v4, {}, {"job"}},
      {"written already: nothing", v4, {{"job", v4_digest}}, {}},
      {"an address changed", v4, {{"job", "0123456789abcdef"}}, {"job"}},
      {"a slice without a digest is rewritten", v4, {{"job", ""}}, {"job"}},
      {"every pod gone: emptied", {}, {{"job", v4_digest}}, {"job"}},
      {"emptied already: nothing", {}, {{"job", empty_v4}}, {}},
      {"dual families: one slice each", mixed, {}, {"job", "job-ipv6"}},
      {"IPv6 pods left: its slice emptied", v4,
       {{"job", v4_digest}, {"job-ipv6", "0123456789abcdef"}}, {"job-ipv6"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> applied;
    for (const nlohmann::json& slice : PlanEndpointSlices(job.job, c.pods, c.stored)) {
      applied.push_back(slice["metadata"]["name"]);
    }
    EXPECT_EQ(applied, c.applied) << c.name;
  }
}

// The reconcile pass carries the slices: once for new addresses, not again once the cache holds
// what it wrote, and not for a job being deleted.
TEST(PlanEndpointSlicesTest, ComputePlanCarriesThemUntilTheCacheHoldsThem) {
  CachedJob job = Job(2);
  Observed observed;
  observed.service_exists = observed.network_policy_exists = true;
  observed.pods = {WithIp(Pod("worker", 0, "Running"), "10.0.0.1"),
                   WithIp(Pod("worker", 1, "Running"), "10.0.0.2")};
  Plan plan = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  ASSERT_EQ(plan.endpoint_slices.size(), 1u);
  EXPECT_EQ(plan.endpoint_slices[0]["endpoints"].size(), 2u);
  observed.endpoint_slices["job"] =
      plan.endpoint_slices[0]["metadata"]["annotations"]["lockstep.dev/endpoints-digest"];
  EXPECT_TRUE(ComputePlan(job, observed, T0(), true, PlanOptions{"l"}).endpoint_slices.empty());
  observed.endpoint_slices.clear();
  job.job.metadata.deletion_timestamp = T0();
  EXPECT_TRUE(ComputePlan(job, observed, T0(), true, PlanOptions{"l"}).endpoint_slices.empty());
}

}  // namespace
}  // namespace lockstep::controller
