// The inter-pod matching rules as tables, each case from kube-scheduler's documented behaviour
// (the core/v1 API reference for LabelSelector, PodAffinityTerm, TopologySpreadConstraint and
// ContainerPort.hostIP; the NodePorts filter's wildcard address).

#include "operator/scheduler/pod_constraints.h"

#include <gtest/gtest.h>

#include <ostream>

namespace lockstep::scheduler {
namespace {

constexpr auto kIn = SelectorOperator::kIn;
constexpr auto kNotIn = SelectorOperator::kNotIn;
constexpr auto kExists = SelectorOperator::kExists;
constexpr auto kDoesNotExist = SelectorOperator::kDoesNotExist;

struct SelectorCase {
  const char* name;
  std::optional<LabelSelector> selector;
  Labels labels;
  bool matches;
};
void PrintTo(const SelectorCase& c, std::ostream* os) { *os << c.name; }

class LabelSelectorTest : public ::testing::TestWithParam<SelectorCase> {};

TEST_P(LabelSelectorTest, MatchesKubernetes) {
  EXPECT_EQ(MatchesLabelSelector(GetParam().selector, GetParam().labels), GetParam().matches);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LabelSelectorTest,
    ::testing::Values(
        SelectorCase{"null selects no pod", std::nullopt, {{"app", "a"}}, false},
        SelectorCase{"empty selects every pod", LabelSelector{}, {}, true},
        SelectorCase{"matchLabels equal", LabelSelector{{{"app", "a"}}, {}}, {{"app", "a"}}, true},
        SelectorCase{
            "matchLabels other value", LabelSelector{{{"app", "a"}}, {}}, {{"app", "b"}}, false},
        SelectorCase{"matchLabels key missing", LabelSelector{{{"app", "a"}}, {}}, {}, false},
        SelectorCase{"In", LabelSelector{{}, {{"tier", kIn, {"x", "y"}}}}, {{"tier", "y"}}, true},
        SelectorCase{"In, key missing", LabelSelector{{}, {{"tier", kIn, {"x"}}}}, {}, false},
        SelectorCase{"NotIn, other value",
                     LabelSelector{{}, {{"tier", kNotIn, {"x"}}}},
                     {{"tier", "y"}},
                     true},
        SelectorCase{
            "NotIn, key missing matches", LabelSelector{{}, {{"tier", kNotIn, {"x"}}}}, {}, true},
        SelectorCase{"NotIn, listed value",
                     LabelSelector{{}, {{"tier", kNotIn, {"x"}}}},
                     {{"tier", "x"}},
                     false},
        SelectorCase{"Exists", LabelSelector{{}, {{"tier", kExists, {}}}}, {{"tier", ""}}, true},
        SelectorCase{"DoesNotExist",
                     LabelSelector{{}, {{"tier", kDoesNotExist, {}}}},
                     {{"tier", "x"}},
                     false},
        SelectorCase{"labels and expressions ANDed",
                     LabelSelector{{{"app", "a"}}, {{"tier", kIn, {"x"}}}},
                     {{"app", "a"}, {"tier", "z"}},
                     false},
        SelectorCase{"Gt is not a label-selector operator",
                     LabelSelector{{}, {{"n", SelectorOperator::kGt, {"1"}}}},
                     {{"n", "5"}},
                     false}),
    [](const ::testing::TestParamInfo<SelectorCase>& p) {
      std::string name = p.param.name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

struct NamespaceCase {
  const char* name;
  PodAffinityTerm term;
  const char* owner;
  const char* pod;
  bool selects;
};
void PrintTo(const NamespaceCase& c, std::ostream* os) { *os << c.name; }

class TermNamespaceTest : public ::testing::TestWithParam<NamespaceCase> {};

TEST_P(TermNamespaceTest, MatchesKubernetes) {
  const NamespaceCase& c = GetParam();
  EXPECT_EQ(TermSelectsNamespace(c.term, c.owner, c.pod), c.selects);
  EXPECT_EQ(TermMatchesPod(c.term, c.owner, c.pod, {}), c.selects);  // selector {}: every pod
}

PodAffinityTerm Term(std::vector<std::string> namespaces, bool all = false) {
  return PodAffinityTerm{LabelSelector{}, std::move(namespaces), all, "kubernetes.io/hostname"};
}

INSTANTIATE_TEST_SUITE_P(
    Table, TermNamespaceTest,
    ::testing::Values(NamespaceCase{"none named: own namespace", Term({}), "a", "a", true},
                      NamespaceCase{"none named: not another", Term({}), "a", "b", false},
                      NamespaceCase{"named: that one", Term({"b"}), "a", "b", true},
                      NamespaceCase{"named: own not implied", Term({"b"}), "a", "a", false},
                      NamespaceCase{"namespaceSelector {}: every one", Term({}, true), "a", "z",
                                    true}),
    [](const ::testing::TestParamInfo<NamespaceCase>& p) {
      std::string name = p.param.name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

struct PortCase {
  const char* name;
  HostPort a;
  HostPort b;
  bool collide;
};
void PrintTo(const PortCase& c, std::ostream* os) { *os << c.name; }

class HostPortTest : public ::testing::TestWithParam<PortCase> {};

TEST_P(HostPortTest, MatchesKubernetes) {
  EXPECT_EQ(HostPortsCollide(GetParam().a, GetParam().b), GetParam().collide);
  EXPECT_EQ(HostPortsCollide(GetParam().b, GetParam().a), GetParam().collide);  // symmetric
}

INSTANTIATE_TEST_SUITE_P(
    Table, HostPortTest,
    ::testing::Values(
        PortCase{"same port and protocol", {8080, "TCP", ""}, {8080, "TCP", ""}, true},
        PortCase{"other port", {8080, "TCP", ""}, {8081, "TCP", ""}, false},
        PortCase{"other protocol", {53, "TCP", ""}, {53, "UDP", ""}, false},
        PortCase{"empty protocol is TCP", {8080, "", ""}, {8080, "TCP", ""}, true},
        PortCase{"0.0.0.0 takes every address",
                 {8080, "TCP", "0.0.0.0"},
                 {8080, "TCP", "10.0.0.1"},
                 true},
        PortCase{"empty address is 0.0.0.0", {8080, "TCP", ""}, {8080, "TCP", "10.0.0.1"}, true},
        PortCase{"same address", {8080, "TCP", "10.0.0.1"}, {8080, "TCP", "10.0.0.1"}, true},
        PortCase{"other addresses", {8080, "TCP", "10.0.0.1"}, {8080, "TCP", "10.0.0.2"}, false},
        PortCase{"hostPort 0 holds nothing", {0, "TCP", ""}, {0, "TCP", ""}, false}),
    [](const ::testing::TestParamInfo<PortCase>& p) {
      std::string name = p.param.name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

struct SpreadCase {
  const char* name;
  int32_t max_skew;
  int32_t min_domains;
  int64_t domain_count;
  int64_t min_count;
  int64_t eligible_domains;
  bool self_matches;
  bool allowed;
};
void PrintTo(const SpreadCase& c, std::ostream* os) { *os << c.name; }

class SpreadTest : public ::testing::TestWithParam<SpreadCase> {};

TEST_P(SpreadTest, MatchesKubernetes) {
  const SpreadCase& c = GetParam();
  SpreadConstraint constraint;
  constraint.max_skew = c.max_skew;
  constraint.min_domains = c.min_domains;
  EXPECT_EQ(
      SpreadAllows(constraint, c.domain_count, c.min_count, c.eligible_domains, c.self_matches),
      c.allowed);
}

// The API reference's example: three zones holding 2/2/1 matching pods.
INSTANTIATE_TEST_SUITE_P(
    Table, SpreadTest,
    ::testing::Values(SpreadCase{"2/2/1 maxSkew 1: zone3 takes it", 1, 1, 1, 1, 3, true, true},
                      SpreadCase{"2/2/1 maxSkew 1: zone1 would skew 2", 1, 1, 2, 1, 3, true, false},
                      SpreadCase{"2/2/1 maxSkew 2: zone1 too", 2, 1, 2, 1, 3, true, true},
                      SpreadCase{"a pod the selector misses adds nothing", 1, 1, 2, 1, 3, false,
                                 true},
                      SpreadCase{"fewer eligible domains than minDomains: global minimum 0", 1, 3,
                                 1, 1, 2, true, false},
                      SpreadCase{"minDomains met: the real minimum", 1, 2, 1, 1, 2, true, true},
                      SpreadCase{"empty cluster: first pod", 1, 1, 0, 0, 2, true, true}),
    [](const ::testing::TestParamInfo<SpreadCase>& p) {
      std::string name = p.param.name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

}  // namespace
}  // namespace lockstep::scheduler
