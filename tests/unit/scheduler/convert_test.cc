// A decoded Pod (operator/kube/objects.h) -> the core's inter-pod constraints (convert.h): what is
// kept, what is dropped as a preference, and how API shorthands become selectors.

#include "operator/scheduler/cycle/convert.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace lockstep::scheduler {
namespace {

using nlohmann::json;

kube::Pod Decode(const json& spec) {
  const json object = {
      {"metadata",
       {{"name", "w-0"}, {"namespace", "ns"}, {"labels", {{"job", "j"}, {"hash", "h1"}}}}},
      {"spec", spec}};
  StatusOr<kube::Pod> pod = kube::DecodePod(object);
  EXPECT_TRUE(pod.ok()) << pod.status().ToString();
  return pod.ok() ? *pod : kube::Pod{};
}

json Term(const std::string& key, json extra = json::object()) {
  json term = {{"labelSelector", {{"matchLabels", {{"job", "j"}}}}}, {"topologyKey", key}};
  term.merge_patch(extra);
  return term;
}

TEST(ConvertTest, PodWithoutTermsHasNoConstraintsAndNeedsNoLabels) {
  const kube::Pod pod = Decode({{"containers", {{{"name", "c"}}}}});
  EXPECT_EQ(pod.placement_terms, nullptr);
  EXPECT_TRUE(ToPodRequest(pod).constraints.empty());
  EXPECT_EQ(ToPodRequest(pod).labels.at("job"), "j");
  EXPECT_FALSE(NeedsPodLabels(pod));
  EXPECT_FALSE(ToBoundPod(pod, /*with_labels=*/false).has_value());
  ASSERT_TRUE(ToBoundPod(pod, /*with_labels=*/true).has_value());
  EXPECT_EQ(ToBoundPod(pod, true)->labels.at("job"), "j");
}

TEST(ConvertTest, RequiredTermsKeptPreferredDropped) {
  const kube::Pod pod =
      Decode({{"affinity",
               {{"podAffinity",
                 {{"requiredDuringSchedulingIgnoredDuringExecution", {Term("zone")}},
                  {"preferredDuringSchedulingIgnoredDuringExecution",
                   {{{"weight", 1}, {"podAffinityTerm", Term("rack")}}}}}},
                {"podAntiAffinity",
                 {{"requiredDuringSchedulingIgnoredDuringExecution",
                   {Term("kubernetes.io/hostname", {{"namespaceSelector", json::object()}})}}}}}},
              {"containers", {{{"name", "c"}}}}});
  const PodConstraints c = ToPodRequest(pod).constraints;
  ASSERT_EQ(c.affinity.size(), 1u);
  EXPECT_EQ(c.affinity[0].topology_key, "zone");
  EXPECT_FALSE(c.affinity[0].all_namespaces);
  ASSERT_EQ(c.anti_affinity.size(), 1u);
  EXPECT_TRUE(c.anti_affinity[0].all_namespaces);  // namespaceSelector {}: every namespace
  EXPECT_TRUE(NeedsPodLabels(pod));
}

TEST(ConvertTest, NamespaceSelectorWithTermsIsStricterNeverLooser) {
  const json selector = {{"namespaceSelector", {{"matchLabels", {{"team", "a"}}}}}};
  const kube::Pod pod =
      Decode({{"affinity",
               {{"podAffinity",
                 {{"requiredDuringSchedulingIgnoredDuringExecution", {Term("zone", selector)}}}},
                {"podAntiAffinity",
                 {{"requiredDuringSchedulingIgnoredDuringExecution", {Term("zone", selector)}}}}}},
              {"containers", {{{"name", "c"}}}}});
  const PodConstraints c = ToPodRequest(pod).constraints;
  EXPECT_TRUE(c.anti_affinity[0].all_namespaces);
  EXPECT_FALSE(c.affinity[0].all_namespaces);
  EXPECT_EQ(c.affinity[0].namespaces, std::vector<std::string>{""});  // selects no pod
}

TEST(ConvertTest, LabelKeysBecomeRequirementsOnTheCarriersValues) {
  const kube::Pod pod = Decode({{"affinity",
                                 {{"podAntiAffinity",
                                   {{"requiredDuringSchedulingIgnoredDuringExecution",
                                     {Term("h", {{"matchLabelKeys", {"hash", "absent"}},
                                                 {"mismatchLabelKeys", {"job"}}})}}}}}},
                                {"containers", {{{"name", "c"}}}}});
  const PodRequest request = ToPodRequest(pod);
  const LabelSelector& s = *request.constraints.anti_affinity[0].selector;
  ASSERT_EQ(s.match_expressions.size(), 2u);  // "absent" is not on the pod: ignored
  EXPECT_EQ(s.match_expressions[0].key, "hash");
  EXPECT_EQ(s.match_expressions[0].op, SelectorOperator::kIn);
  EXPECT_EQ(s.match_expressions[0].values, std::vector<std::string>{"h1"});
  EXPECT_EQ(s.match_expressions[1].key, "job");
  EXPECT_EQ(s.match_expressions[1].op, SelectorOperator::kNotIn);
  EXPECT_EQ(s.match_expressions[1].values, std::vector<std::string>{"j"});
}

TEST(ConvertTest, OnlyDoNotScheduleSpreadIsAFilter) {
  const json selector = {{"matchLabels", {{"job", "j"}}}};
  const kube::Pod pod = Decode({{"topologySpreadConstraints",
                                 {{{"maxSkew", 2},
                                   {"topologyKey", "zone"},
                                   {"whenUnsatisfiable", "DoNotSchedule"},
                                   {"labelSelector", selector},
                                   {"minDomains", 3},
                                   {"matchLabelKeys", {"hash"}}},
                                  {{"maxSkew", 1},
                                   {"topologyKey", "kubernetes.io/hostname"},
                                   {"whenUnsatisfiable", "ScheduleAnyway"},
                                   {"labelSelector", selector}}}},
                                {"containers", {{{"name", "c"}}}}});
  const PodConstraints c = ToPodRequest(pod).constraints;
  ASSERT_EQ(c.spread.size(), 1u);
  EXPECT_EQ(c.spread[0].max_skew, 2);
  EXPECT_EQ(c.spread[0].min_domains, 3);
  EXPECT_EQ(c.spread[0].topology_key, "zone");
  ASSERT_EQ(c.spread[0].selector->match_expressions.size(), 1u);
  EXPECT_EQ(c.spread[0].selector->match_expressions[0].key, "hash");
}

TEST(ConvertTest, HostPortsOfContainersAndInitContainers) {
  const kube::Pod pod =
      Decode({{"initContainers",
               {{{"name", "side"},
                 {"ports", {{{"containerPort", 53}, {"hostPort", 53}, {"protocol", "UDP"}}}}}}},
              {"containers",
               {{{"name", "c"},
                 {"ports",
                  {{{"containerPort", 8080}, {"hostPort", 8080}, {"hostIP", "10.0.0.1"}},
                   {{"containerPort", 9090}}}}}}}});
  const PodConstraints c = ToPodRequest(pod).constraints;
  ASSERT_EQ(c.host_ports.size(), 2u);
  EXPECT_EQ(c.host_ports[0], (HostPort{53, "UDP", ""}));
  EXPECT_EQ(c.host_ports[1], (HostPort{8080, "TCP", "10.0.0.1"}));  // protocol defaults to TCP
  EXPECT_FALSE(NeedsPodLabels(pod));                                // ports alone read no labels
  const std::optional<BoundPod> bound = ToBoundPod(pod, /*with_labels=*/false);
  ASSERT_TRUE(bound.has_value());
  EXPECT_EQ(bound->host_ports.size(), 2u);
  EXPECT_TRUE(bound->labels.empty());
}

}  // namespace
}  // namespace lockstep::scheduler
