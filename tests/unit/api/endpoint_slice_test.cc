#include "operator/api/endpoint_slice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/api/children.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

const PodEndpoint kA{"demo-worker-0", "uid-a", "10.0.0.5", "node-1"};
const PodEndpoint kB{"demo-worker-1", "uid-b", "10.0.0.6", "node-2"};

TEST(EndpointSliceTest, FamilyAndName) {
  struct Case {
    std::string ip;
    AddressFamily family;
    std::string name;
  };
  for (const Case& c : std::vector<Case>{{"10.0.0.5", AddressFamily::kIPv4, "demo"},
                                         {"fd00::5", AddressFamily::kIPv6, "demo-ipv6"},
                                         {"::ffff:10.0.0.5", AddressFamily::kIPv6, "demo-ipv6"}}) {
    EXPECT_EQ(FamilyOf(c.ip), c.family) << c.ip;
    EXPECT_EQ(EndpointSliceName("demo", FamilyOf(c.ip)), c.name) << c.ip;
  }
}

TEST(EndpointSliceTest, SliceOfTheHeadlessServiceWithHostnamesSortedByPod) {
  const TrainingJob job = testing::MinimalJob();
  const json slice = BuildEndpointSlice(job, AddressFamily::kIPv4, {kB, kA});
  EXPECT_EQ(slice["apiVersion"], "discovery.k8s.io/v1");
  EXPECT_EQ(slice["kind"], "EndpointSlice");
  EXPECT_EQ(slice["addressType"], "IPv4");
  const json& meta = slice["metadata"];
  EXPECT_EQ(meta["name"], "demo");
  EXPECT_EQ(meta["namespace"], "ns");
  EXPECT_EQ(meta["labels"]["kubernetes.io/service-name"], "demo");
  EXPECT_EQ(meta["labels"]["endpointslice.kubernetes.io/managed-by"],
            "lockstep-operator.lockstep.dev");
  EXPECT_EQ(meta["labels"]["lockstep.dev/job-name"], "demo");
  EXPECT_EQ(meta["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(meta["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(meta["annotations"]["lockstep.dev/endpoints-digest"],
            EndpointsDigest(AddressFamily::kIPv4, {kA, kB}));
  ASSERT_EQ(slice["endpoints"].size(), 2u);
  const json& first = slice["endpoints"][0];
  EXPECT_EQ(first["addresses"], json({"10.0.0.5"}));
  EXPECT_EQ(first["hostname"], "demo-worker-0");
  EXPECT_EQ(first["nodeName"], "node-1");
  EXPECT_EQ(first["conditions"],
            json({{"ready", true}, {"serving", true}, {"terminating", false}}));
  EXPECT_EQ(first["targetRef"], json({{"kind", "Pod"},
                                      {"namespace", "ns"},
                                      {"name", "demo-worker-0"},
                                      {"uid", "uid-a"}}));
  EXPECT_EQ(slice["endpoints"][1]["hostname"], "demo-worker-1");
  EXPECT_EQ(slice["ports"],
            json::array({{{"name", "rdzv"}, {"port", kRdzvPort}, {"protocol", "TCP"}}}));
}

TEST(EndpointSliceTest, AnEndpointWithoutANodeHasNoNodeName) {
  const json slice = BuildEndpointSlice(testing::MinimalJob(), AddressFamily::kIPv6,
                                        {{"demo-worker-0", "u", "fd00::1", ""}});
  EXPECT_EQ(slice["addressType"], "IPv6");
  EXPECT_EQ(slice["metadata"]["name"], "demo-ipv6");
  EXPECT_FALSE(slice["endpoints"][0].contains("nodeName"));
}

TEST(EndpointSliceTest, AnEmptySliceIsValidAndHasItsOwnDigest) {
  const json slice = BuildEndpointSlice(testing::MinimalJob(), AddressFamily::kIPv4, {});
  EXPECT_EQ(slice["endpoints"], json::array());
  EXPECT_NE(EndpointsDigest(AddressFamily::kIPv4, {}), EndpointsDigest(AddressFamily::kIPv4, {kA}));
}

// The digest ignores order and sees every field of every entry, and the family.
TEST(EndpointSliceTest, DigestChangesWithAnyFieldAndNotWithOrder) {
  const std::string base = EndpointsDigest(AddressFamily::kIPv4, {kA, kB});
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(EndpointsDigest(AddressFamily::kIPv4, {kB, kA}), base);
  EXPECT_NE(EndpointsDigest(AddressFamily::kIPv6, {kA, kB}), base);
  const std::vector<PodEndpoint> changed = {
      {"demo-worker-9", "uid-a", "10.0.0.5", "node-1"},
      {"demo-worker-0", "uid-z", "10.0.0.5", "node-1"},
      {"demo-worker-0", "uid-a", "10.0.0.9", "node-1"},
      {"demo-worker-0", "uid-a", "10.0.0.5", "node-9"},
      {"demo-worker-0", "uid-a", "10.0.0.5", ""},
  };
  for (const PodEndpoint& e : changed) {
    EXPECT_NE(EndpointsDigest(AddressFamily::kIPv4, {e, kB}), base) << e.pod << " " << e.uid;
  }
  // Fields do not run into each other: moving a character across a boundary is a change.
  EXPECT_NE(EndpointsDigest(AddressFamily::kIPv4, {{"ab", "c", "1.1.1.1", "n"}}),
            EndpointsDigest(AddressFamily::kIPv4, {{"a", "bc", "1.1.1.1", "n"}}));
  EXPECT_NE(EndpointsDigest(AddressFamily::kIPv4, {kA}), base);
}

}  // namespace
}  // namespace lockstep::api
