// helm/lockstep rendered by the real `helm` binary: lint and schema, the objects a default install
// creates, the hardening of the Deployment, the exact RBAC grants in both scopes, and the CRD and
// dashboard copies staying in step with their sources.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/helm/command.h"
#include "tests/unit/helm/rendered_chart.h"

namespace lockstep::helmtest {
namespace {

const std::string kFullname = std::string(kRelease) + "-lockstep";

// Every grant the operator needs, and nothing else (docs/install.md names the code path behind
// each). A change here is a change to the operator's privileges: review it as one.
const std::set<Grant> kNamespacedGrants = {
    {"lockstep.dev", "trainingjobs", "get"},
    {"lockstep.dev", "trainingjobs", "list"},
    {"lockstep.dev", "trainingjobs", "watch"},
    {"lockstep.dev", "trainingjobs", "delete"},
    {"lockstep.dev", "trainingjobs/status", "get"},
    {"lockstep.dev", "trainingjobs/status", "patch"},
    {"lockstep.dev", "trainingjobs/finalizers", "update"},
    {"lockstep.dev", "trainingtemplates", "get"},
    {"lockstep.dev", "trainingtemplates", "list"},
    {"lockstep.dev", "trainingtemplates", "watch"},
    {"", "pods", "get"},
    {"", "pods", "list"},
    {"", "pods", "watch"},
    {"", "pods", "create"},
    {"", "pods", "delete"},
    {"", "pods/binding", "create"},
    {"", "pods/status", "patch"},
    {"", "services", "get"},
    {"", "services", "list"},
    {"", "services", "watch"},
    {"", "services", "create"},
    // Issue 44 item 7: get and create only; list or watch would read every Secret around.
    {"", "secrets", "get"},
    {"", "secrets", "create"},
    {"", "events", "create"},
    {"", "persistentvolumeclaims", "patch"},
    {"networking.k8s.io", "networkpolicies", "list"},
    {"networking.k8s.io", "networkpolicies", "watch"},
    {"networking.k8s.io", "networkpolicies", "create"},
    {"discovery.k8s.io", "endpointslices", "list"},
    {"discovery.k8s.io", "endpointslices", "watch"},
    {"discovery.k8s.io", "endpointslices", "create"},
    {"discovery.k8s.io", "endpointslices", "patch"},
};
const std::set<Grant> kClusterReadGrants = {
    {"lockstep.dev", "clustertrainingtemplates", "get"},
    {"lockstep.dev", "clustertrainingtemplates", "list"},
    {"lockstep.dev", "clustertrainingtemplates", "watch"},
    {"", "nodes", "get"},
    {"", "nodes", "list"},
    {"", "nodes", "watch"},
    {"scheduling.k8s.io", "priorityclasses", "get"},
    {"scheduling.k8s.io", "priorityclasses", "list"},
    {"scheduling.k8s.io", "priorityclasses", "watch"},
    {"", "persistentvolumeclaims", "get"},
    {"", "persistentvolumeclaims", "list"},
    {"", "persistentvolumeclaims", "watch"},
    {"", "persistentvolumes", "get"},
    {"", "persistentvolumes", "list"},
    {"", "persistentvolumes", "watch"},
    {"", "persistentvolumes", "patch"},
    {"storage.k8s.io", "storageclasses", "get"},
    {"storage.k8s.io", "storageclasses", "list"},
    {"storage.k8s.io", "storageclasses", "watch"},
};
// kueue.enabled=true only: the Workloads the operator owns for queued jobs and their status
// (namespaced); Kueue's cluster-scoped objects, read only.
const std::set<Grant> kKueueNamespacedGrants = {
    {"kueue.x-k8s.io", "workloads", "list"},
    {"kueue.x-k8s.io", "workloads", "watch"},
    {"kueue.x-k8s.io", "workloads", "create"},
    {"kueue.x-k8s.io", "workloads", "patch"},
    {"kueue.x-k8s.io", "workloads", "delete"},
    {"kueue.x-k8s.io", "workloads/status", "patch"},
};
const std::set<Grant> kKueueClusterReadGrants = {
    {"kueue.x-k8s.io", "resourceflavors", "get"},
    {"kueue.x-k8s.io", "resourceflavors", "list"},
    {"kueue.x-k8s.io", "resourceflavors", "watch"},
    {"kueue.x-k8s.io", "workloadpriorityclasses", "get"},
    {"kueue.x-k8s.io", "workloadpriorityclasses", "list"},
    {"kueue.x-k8s.io", "workloadpriorityclasses", "watch"},
};
const std::set<Grant> kPodReadGrants = {
    {"", "pods", "get"}, {"", "pods", "list"}, {"", "pods", "watch"}};
const std::set<Grant> kNodeLeaseGrants = {{"coordination.k8s.io", "leases", "get"},
                                          {"coordination.k8s.io", "leases", "list"},
                                          {"coordination.k8s.io", "leases", "watch"}};
const std::set<Grant> kLeaderElectionGrants = {{"coordination.k8s.io", "leases", "get"},
                                               {"coordination.k8s.io", "leases", "create"},
                                               {"coordination.k8s.io", "leases", "update"}};

std::set<Grant> Union(std::set<Grant> a, const std::set<Grant>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

YAML::Node OperatorContainer(const YAML::Node& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"][0];
}

TEST(HelmChart, LintIsClean) {
  const CommandResult lint =
      RunCommand({HelmBinary(), "lint", "--strict", SourcePath("helm/lockstep")});
  EXPECT_TRUE(lint.ok()) << lint.out << lint.err;
  EXPECT_EQ(lint.out.find("[WARNING]"), std::string::npos) << lint.out;
}

TEST(HelmChart, SchemaRejectsWrongTypesAndUnknownKeys) {
  const std::vector<std::vector<std::string>> bad = {
      {"--set", "replicaCount=two"},
      {"--set", "crds.install=maybe"},
      {"--set", "rbac.scope=everywhere"},
      {"--set", "operator.logFormat=xml"},
      {"--set", "metrics.port=99999"},
      {"--set", "serviceMonitor.interval=often"},
      {"--set", "podSecurityContext.runAsNonRoot=false"},
      {"--set", "kueue.enabled=yes"},
      {"--set", "kueue.queue=default"},
      {"--set", "replicas=3"},  // a typo of replicaCount must not pass silently
      {"--set", "metrics.secure=yes"},
      {"--set", "metrics.readerSubjects[0].kind=Pod", "--set", "metrics.readerSubjects[0].name=p"},
      {"--set", "serviceMonitor.tlsConfig=insecure"},
  };
  for (const std::vector<std::string>& flags : bad) {
    std::vector<std::string> argv = {HelmBinary(), "lint", SourcePath("helm/lockstep")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const CommandResult lint = RunCommand(argv);
    EXPECT_FALSE(lint.ok()) << "helm lint accepted " << flags[1];
    EXPECT_NE((lint.out + lint.err).find("schema"), std::string::npos) << lint.out << lint.err;
    const RenderedChart rendered = RenderChart(flags);
    EXPECT_FALSE(rendered.error.empty()) << "helm template accepted " << flags[1];
  }
}

TEST(HelmChart, DefaultInstallCreatesEveryObject) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  EXPECT_TRUE(chart.Find("CustomResourceDefinition", "trainingjobs.lockstep.dev"));
  EXPECT_TRUE(chart.Find("ServiceAccount", kFullname));
  EXPECT_TRUE(chart.Find("ClusterRole", kFullname));
  EXPECT_TRUE(chart.Find("ClusterRoleBinding", kFullname));
  EXPECT_TRUE(chart.Find("Role", kFullname + "-leader-election"));
  EXPECT_TRUE(chart.Find("Role", kFullname + "-node-leases"));
  EXPECT_TRUE(chart.Find("Deployment", kFullname));
  EXPECT_TRUE(chart.Find("PodDisruptionBudget", kFullname));
  EXPECT_TRUE(chart.Find("Service", kFullname + "-metrics"));
  EXPECT_TRUE(chart.Find("ConfigMap", kFullname + "-dashboard"));
  EXPECT_TRUE(chart.Find("Pod", kFullname + "-test-metrics"));
  EXPECT_TRUE(chart.OfKind("ServiceMonitor").empty()) << "ServiceMonitor must be opt-in";
  for (const YAML::Node& doc : chart.docs) {
    const YAML::Node labels = doc["metadata"]["labels"];
    EXPECT_EQ(labels["app.kubernetes.io/instance"].as<std::string>(""), kRelease)
        << doc["kind"] << " " << doc["metadata"]["name"];
    EXPECT_EQ(labels["app.kubernetes.io/managed-by"].as<std::string>(""), "Helm");
  }
}

TEST(HelmChart, DeploymentIsHighlyAvailableAndHardened) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const auto deployment = chart.Find("Deployment", kFullname);
  ASSERT_TRUE(deployment);
  EXPECT_EQ((*deployment)["spec"]["replicas"].as<int>(), 2);
  const YAML::Node pod = (*deployment)["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), kFullname);
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_EQ(pod["securityContext"]["runAsUser"].as<int>(), 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");

  const YAML::Node container = OperatorContainer(*deployment);
  const YAML::Node sc = container["securityContext"];
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>());
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>());
  EXPECT_EQ(StringList(sc["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  EXPECT_EQ(container["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["port"].as<std::string>(), "health");
  EXPECT_TRUE(container["resources"]["requests"]["cpu"]);
  EXPECT_TRUE(container["resources"]["requests"]["memory"]);
  EXPECT_TRUE(container["resources"]["limits"]["memory"]);
  EXPECT_EQ(container["image"].as<std::string>(), "lockstep/operator:0.1.0");

  const std::vector<std::string> args = StringList(container["args"]);
  EXPECT_TRUE(Contains(args, "--leader-elect"));
  EXPECT_TRUE(Contains(args, std::string("--leader-election-namespace=") + kNamespace));
  EXPECT_TRUE(Contains(args, "--leader-election-id=" + kFullname)) << "one Lease per release";
  EXPECT_TRUE(Contains(args, "--metrics-bind-address=:8080"));
  EXPECT_TRUE(Contains(args, "--health-probe-bind-address=:8081"));
  EXPECT_TRUE(Contains(args, "--launcher-image=lockstep/launcher:0.1.0"));
  // The jobs' NetworkPolicies let exactly the operator's pods reach the rendezvous port: the
  // labels passed are the Deployment's selector.
  std::string pod_labels;
  for (const auto& [key, value] : (*deployment)["spec"]["selector"]["matchLabels"]
                                      .as<std::map<std::string, std::string>>()) {
    pod_labels += (pod_labels.empty() ? "" : ",") + key + "=" + value;
  }
  EXPECT_TRUE(Contains(args, "--operator-pod-labels=" + pod_labels)) << pod_labels;
  for (const std::string& arg : args) {
    EXPECT_NE(arg.rfind("--namespace=", 0), 0u) << "cluster scope watches every namespace";
  }

  const auto pdb = chart.Find("PodDisruptionBudget", kFullname);
  ASSERT_TRUE(pdb);
  EXPECT_EQ((*pdb)["spec"]["minAvailable"].as<int>(), 1);
  using Labels = std::map<std::string, std::string>;
  EXPECT_EQ((*pdb)["spec"]["selector"]["matchLabels"].as<Labels>(),
            (*deployment)["spec"]["selector"]["matchLabels"].as<Labels>());
}

TEST(HelmChart, ImagesFollowValues) {
  const RenderedChart chart =
      RenderChart({"--set", "image.tag=1.2.3", "--set", "launcherImage.repository=reg/launch",
                   "--set",
                   "launcherImage.digest=sha256:" + std::string(64, 'a')});
  ASSERT_EQ(chart.error, "");
  const auto deployment = chart.Find("Deployment", kFullname);
  ASSERT_TRUE(deployment);
  const YAML::Node container = OperatorContainer(*deployment);
  EXPECT_EQ(container["image"].as<std::string>(), "lockstep/operator:1.2.3");
  EXPECT_TRUE(Contains(StringList(container["args"]),
                       "--launcher-image=reg/launch@sha256:" + std::string(64, 'a')));
}

TEST(HelmChart, ClusterScopeGrantsExactlyWhatTheOperatorUses) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const auto role = chart.Find("ClusterRole", kFullname);
  ASSERT_TRUE(role);
  EXPECT_EQ(Grants(*role), Union(kNamespacedGrants, kClusterReadGrants));
  // The operator's one ClusterRole; the other two are users' (aggregated into edit and view).
  std::set<std::string> cluster_roles;
  for (const YAML::Node& r : chart.OfKind("ClusterRole")) {
    cluster_roles.insert(r["metadata"]["name"].as<std::string>());
  }
  EXPECT_EQ(cluster_roles,
            (std::set<std::string>{kFullname, kFullname + "-edit", kFullname + "-view"}));

  const auto election = chart.Find("Role", kFullname + "-leader-election");
  ASSERT_TRUE(election);
  EXPECT_EQ((*election)["metadata"]["namespace"].as<std::string>(), kNamespace);
  EXPECT_EQ(Grants(*election), kLeaderElectionGrants);
  // Renewing and taking over are limited to this release's Lease.
  for (const YAML::Node& rule : (*election)["rules"]) {
    const std::vector<std::string> verbs = StringList(rule["verbs"]);
    if (Contains(verbs, "update") || Contains(verbs, "get")) {
      EXPECT_EQ(StringList(rule["resourceNames"]), std::vector<std::string>{kFullname});
    }
  }
  const auto node_leases = chart.Find("Role", kFullname + "-node-leases");
  ASSERT_TRUE(node_leases);
  EXPECT_EQ((*node_leases)["metadata"]["namespace"].as<std::string>(), "kube-node-lease");
  EXPECT_EQ(Grants(*node_leases), kNodeLeaseGrants);

  const auto binding = chart.Find("ClusterRoleBinding", kFullname);
  ASSERT_TRUE(binding);
  EXPECT_EQ((*binding)["subjects"][0]["name"].as<std::string>(), kFullname);
  EXPECT_EQ((*binding)["subjects"][0]["namespace"].as<std::string>(), kNamespace);
}

TEST(HelmChart, NamespaceScopeUsesRolesAndNamespaceFlags) {
  const RenderedChart chart =
      RenderChart({"--set", "rbac.scope=namespace", "--set", "rbac.namespaces={team-a,team-b}"});
  ASSERT_EQ(chart.error, "");
  EXPECT_FALSE(chart.Find("ClusterRole", kFullname)) << "no cluster-wide writes or secrets";
  const auto reads = chart.Find("ClusterRole", kFullname + "-cluster-read");
  ASSERT_TRUE(reads);
  EXPECT_EQ(Grants(*reads), Union(kClusterReadGrants, kPodReadGrants));

  std::set<std::string> role_namespaces;
  for (const YAML::Node& role : chart.OfKind("Role")) {
    if (role["metadata"]["name"].as<std::string>() != kFullname) continue;
    role_namespaces.insert(role["metadata"]["namespace"].as<std::string>());
    EXPECT_EQ(Grants(role), kNamespacedGrants);
  }
  EXPECT_EQ(role_namespaces, (std::set<std::string>{"team-a", "team-b"}));

  const auto deployment = chart.Find("Deployment", kFullname);
  ASSERT_TRUE(deployment);
  const std::vector<std::string> args = StringList(OperatorContainer(*deployment)["args"]);
  EXPECT_TRUE(Contains(args, "--namespace=team-a"));
  EXPECT_TRUE(Contains(args, "--namespace=team-b"));

  const RenderedChart release_only = RenderChart({"--set", "rbac.scope=namespace"});
  ASSERT_EQ(release_only.error, "");
  const auto own = release_only.Find("Deployment", kFullname);
  ASSERT_TRUE(own);
  EXPECT_TRUE(Contains(StringList(OperatorContainer(*own)["args"]),
                       std::string("--namespace=") + kNamespace));
}

// Gangs are created placed by default; operator.createPlaced=false turns it off.
TEST(HelmChart, CreatePlacedValueBecomesTheFlag) {
  const auto args = [](const RenderedChart& chart) {
    const auto deployment = chart.Find("Deployment", kFullname);
    return deployment ? StringList(OperatorContainer(*deployment)["args"])
                      : std::vector<std::string>{};
  };
  const RenderedChart on = RenderChart();
  ASSERT_EQ(on.error, "");
  EXPECT_TRUE(Contains(args(on), "--create-placed=true"));
  const RenderedChart off = RenderChart({"--set", "operator.createPlaced=false"});
  ASSERT_EQ(off.error, "");
  EXPECT_TRUE(Contains(args(off), "--create-placed=false"));
}

// Off by default (the exact-grant tests above render the defaults and would see any Kueue rule);
// on, in both scopes, the operator gets --kueue and exactly the Kueue grants, nothing else.
TEST(HelmChart, KueueValueAddsItsGrantsAndFlagOnlyWhenOn) {
  const auto has_kueue_flag = [](const RenderedChart& chart) {
    const auto deployment = chart.Find("Deployment", kFullname);
    return deployment && Contains(StringList(OperatorContainer(*deployment)["args"]), "--kueue");
  };
  const RenderedChart off = RenderChart();
  ASSERT_EQ(off.error, "");
  EXPECT_FALSE(has_kueue_flag(off));

  const RenderedChart cluster = RenderChart({"--set", "kueue.enabled=true"});
  ASSERT_EQ(cluster.error, "");
  EXPECT_TRUE(has_kueue_flag(cluster));
  const auto role = cluster.Find("ClusterRole", kFullname);
  ASSERT_TRUE(role);
  EXPECT_EQ(Grants(*role), Union(Union(kNamespacedGrants, kClusterReadGrants),
                                 Union(kKueueNamespacedGrants, kKueueClusterReadGrants)));

  const RenderedChart scoped = RenderChart(
      {"--set", "kueue.enabled=true", "--set", "rbac.scope=namespace", "--set",
       "rbac.namespaces={team-a,team-b}"});
  ASSERT_EQ(scoped.error, "");
  EXPECT_TRUE(has_kueue_flag(scoped));
  const auto reads = scoped.Find("ClusterRole", kFullname + "-cluster-read");
  ASSERT_TRUE(reads);
  EXPECT_EQ(Grants(*reads),
            Union(Union(kClusterReadGrants, kPodReadGrants), kKueueClusterReadGrants));
  int roles = 0;
  for (const YAML::Node& r : scoped.OfKind("Role")) {
    if (r["metadata"]["name"].as<std::string>() != kFullname) continue;
    ++roles;
    EXPECT_EQ(Grants(r), Union(kNamespacedGrants, kKueueNamespacedGrants))
        << r["metadata"]["namespace"];
  }
  EXPECT_EQ(roles, 2);
}

TEST(HelmChart, ServiceMonitorSelectsTheMetricsService) {
  const RenderedChart chart = RenderChart(
      {"--set", "serviceMonitor.enabled=true", "--set",
       "serviceMonitor.additionalLabels.release=kube-prometheus-stack"});
  ASSERT_EQ(chart.error, "");
  const auto monitor = chart.Find("ServiceMonitor", kFullname);
  ASSERT_TRUE(monitor);
  EXPECT_EQ((*monitor)["metadata"]["labels"]["release"].as<std::string>(),
            "kube-prometheus-stack");
  EXPECT_EQ((*monitor)["spec"]["endpoints"][0]["port"].as<std::string>(), "metrics");
  // The jobs' own namespace label must survive the target's (prometheus_dashboard_test.sh).
  EXPECT_TRUE((*monitor)["spec"]["endpoints"][0]["honorLabels"].as<bool>(false));
  const auto service = chart.Find("Service", kFullname + "-metrics");
  ASSERT_TRUE(service);
  EXPECT_EQ((*service)["spec"]["ports"][0]["name"].as<std::string>(), "metrics");
  using Labels = std::map<std::string, std::string>;
  for (const auto& [key, value] : (*monitor)["spec"]["selector"]["matchLabels"].as<Labels>()) {
    EXPECT_EQ((*service)["metadata"]["labels"][key].as<std::string>(""), value) << key;
  }
}

// Namespace users get TrainingJobs through the built-in roles: edit and admin write them, view
// reads them, nobody but the operator writes their status. tests/integration/helm checks the
// aggregation on a real API server with impersonated users.
TEST(HelmChart, UserRolesAggregateIntoTheBuiltInRoles) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const auto edit = chart.Find("ClusterRole", kFullname + "-edit");
  const auto view = chart.Find("ClusterRole", kFullname + "-view");
  ASSERT_TRUE(edit);
  ASSERT_TRUE(view);
  const YAML::Node edit_labels = (*edit)["metadata"]["labels"];
  EXPECT_EQ(edit_labels["rbac.authorization.k8s.io/aggregate-to-edit"].as<std::string>(""), "true");
  EXPECT_EQ(edit_labels["rbac.authorization.k8s.io/aggregate-to-admin"].as<std::string>(""),
            "true");
  EXPECT_FALSE(edit_labels["rbac.authorization.k8s.io/aggregate-to-view"]);
  EXPECT_EQ((*view)["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"]
                .as<std::string>(""),
            "true");
  std::set<Grant> edit_grants, view_grants;
  for (const char* verb : {"get", "list", "watch"}) {
    view_grants.insert({"lockstep.dev", "trainingjobs", verb});
    view_grants.insert({"lockstep.dev", "trainingjobs/status", verb});
    view_grants.insert({"lockstep.dev", "trainingtemplates", verb});
  }
  edit_grants = view_grants;
  for (const char* verb : {"create", "update", "patch", "delete", "deletecollection"}) {
    edit_grants.insert({"lockstep.dev", "trainingjobs", verb});
    edit_grants.insert({"lockstep.dev", "trainingtemplates", verb});
  }
  EXPECT_EQ(Grants(*edit), edit_grants);
  EXPECT_EQ(Grants(*view), view_grants);

  for (const char* off : {"rbac.aggregateToDefaultRoles=false", "rbac.create=false"}) {
    const RenderedChart without = RenderChart({"--set", off});
    ASSERT_EQ(without.error, "");
    EXPECT_FALSE(without.Find("ClusterRole", kFullname + "-edit")) << off;
    EXPECT_FALSE(without.Find("ClusterRole", kFullname + "-view")) << off;
  }
}

TEST(HelmChart, ChartDeclaresTheOldestTestedKubernetes) {
  // hack/lib/versions.sh's K8S_VERSION is the only Kubernetes the tests run on: its minor
  // release is the oldest the chart admits, with any patch and provider suffix.
  const std::string tested = TestedKubeVersion();  // v1.34.4
  ASSERT_EQ(tested.rfind("v1.", 0), 0u) << tested;
  const std::string minor = tested.substr(1, tested.find_last_of('.') - 1);  // 1.34
  const YAML::Node chart = YAML::LoadFile(SourcePath("helm/lockstep/Chart.yaml"));
  EXPECT_EQ(chart["kubeVersion"].as<std::string>(""), ">=" + minor + ".0-0");
  // Rendering for one minor release older is refused; for the tested one and a provider's
  // suffixed version of it, accepted.
  const int minor_number = std::stoi(minor.substr(minor.find('.') + 1));
  const std::string older = "v1." + std::to_string(minor_number - 1) + ".9";
  EXPECT_NE(RenderChart({"--kube-version", older}).error, "") << older;
  EXPECT_EQ(RenderChart({"--kube-version", "v" + minor + ".2-eks-1234"}).error, "");
}

TEST(HelmChart, DashboardConfigMapCarriesTheDashboardFile) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const auto config_map = chart.Find("ConfigMap", kFullname + "-dashboard");
  ASSERT_TRUE(config_map);
  EXPECT_EQ((*config_map)["metadata"]["labels"]["grafana_dashboard"].as<std::string>(), "1");
  std::string file = ReadFile(SourcePath("helm/lockstep/dashboards/lockstep.json"));
  while (!file.empty() && file.back() == '\n') file.pop_back();
  EXPECT_EQ((*config_map)["data"]["lockstep.json"].as<std::string>(), file);

  const RenderedChart off = RenderChart({"--set", "grafanaDashboard.enabled=false"});
  ASSERT_EQ(off.error, "");
  EXPECT_TRUE(off.OfKind("ConfigMap").empty());
}

TEST(HelmChart, ChartCrdIsTheSourceCrd) {
  const CommandResult check = RunCommand({"bash", SourcePath("hack/sync-chart-crds.sh"),
                                          "--check"});
  EXPECT_TRUE(check.ok()) << check.err;

  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const auto rendered = chart.Find("CustomResourceDefinition", "trainingjobs.lockstep.dev");
  ASSERT_TRUE(rendered);
  EXPECT_EQ((*rendered)["metadata"]["annotations"]["helm.sh/resource-policy"].as<std::string>(),
            "keep");
  const YAML::Node source = YAML::LoadFile(SourcePath("crds/lockstep.dev_trainingjobs.yaml"));
  EXPECT_EQ(YAML::Dump((*rendered)["spec"]), YAML::Dump(source["spec"]));
  for (const char* plural : {"clustertrainingtemplates", "trainingtemplates"}) {
    const auto tmpl = chart.Find("CustomResourceDefinition", std::string(plural) + ".lockstep.dev");
    ASSERT_TRUE(tmpl) << plural;
    const YAML::Node tmpl_source =
        YAML::LoadFile(SourcePath("crds/lockstep.dev_" + std::string(plural) + ".yaml"));
    EXPECT_EQ(YAML::Dump((*tmpl)["spec"]), YAML::Dump(tmpl_source["spec"])) << plural;
  }

  const RenderedChart without = RenderChart({"--set", "crds.install=false"});
  ASSERT_EQ(without.error, "");
  EXPECT_TRUE(without.OfKind("CustomResourceDefinition").empty());
}

TEST(HelmChart, TestHookCurlsTheMetricsService) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const auto pod = chart.Find("Pod", kFullname + "-test-metrics");
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["metadata"]["annotations"]["helm.sh/hook"].as<std::string>(), "test");
  const std::string script = (*pod)["spec"]["containers"][0]["args"][0].as<std::string>();
  EXPECT_NE(script.find(kFullname + "-metrics." + kNamespace + ".svc:8080/metrics"),
            std::string::npos)
      << script;
}

// metrics.secure (off by default): the flags, the operator's grants to review tokens, the
// scrapers' role, the ServiceMonitor's https endpoint, the test hook's own reader. The operator's
// answers to real tokens: tests/integration/helm/metrics_secure_test.sh.
std::vector<std::string> Args(const YAML::Node& deployment) {
  return StringList(OperatorContainer(deployment)["args"]);
}

// Issue 44 item 7: the template policy is on by default, bound to every namespace unless
// templatePolicy.namespaceSelector says otherwise, and off with templatePolicy.enabled=false.
// What it refuses is checked against the API server (integration.helm.template_policy).
TEST(HelmChart, TemplatePolicyIsOnByDefaultAndItsBindingFollowsTheSelector) {
  const RenderedChart chart = RenderChart();
  ASSERT_EQ(chart.error, "");
  const std::string name = kFullname + "-trainingjob-templates";
  const auto policy = chart.Find("ValidatingAdmissionPolicy", name);
  ASSERT_TRUE(policy);
  EXPECT_EQ((*policy)["spec"]["failurePolicy"].as<std::string>(), "Fail");
  EXPECT_EQ((*policy)["spec"]["matchConstraints"]["resourceRules"][0]["resources"][0]
                .as<std::string>(),
            "trainingjobs");
  EXPECT_EQ((*policy)["spec"]["validations"].size(), 4u);
  const auto binding = chart.Find("ValidatingAdmissionPolicyBinding", name);
  ASSERT_TRUE(binding);
  EXPECT_EQ((*binding)["spec"]["policyName"].as<std::string>(), name);
  EXPECT_EQ((*binding)["spec"]["validationActions"][0].as<std::string>(), "Deny");
  EXPECT_FALSE((*binding)["spec"]["matchResources"]);

  const RenderedChart scoped =
      RenderChart({"--set", "templatePolicy.namespaceSelector.matchLabels.team=a"});
  ASSERT_EQ(scoped.error, "");
  const auto scoped_binding = scoped.Find("ValidatingAdmissionPolicyBinding", name);
  ASSERT_TRUE(scoped_binding);
  EXPECT_EQ((*scoped_binding)["spec"]["matchResources"]["namespaceSelector"]["matchLabels"]["team"]
                .as<std::string>(),
            "a");

  const RenderedChart off = RenderChart({"--set", "templatePolicy.enabled=false"});
  ASSERT_EQ(off.error, "");
  EXPECT_FALSE(off.Find("ValidatingAdmissionPolicy", name));
  EXPECT_FALSE(off.Find("ValidatingAdmissionPolicyBinding", name));
}

TEST(HelmChart, MetricsSecureOffAddsNothing) {
  const RenderedChart chart = RenderChart({"--set", "serviceMonitor.enabled=true"});
  ASSERT_EQ(chart.error, "");
  const auto deployment = chart.Find("Deployment", kFullname);
  ASSERT_TRUE(deployment);
  for (const std::string& arg : Args(*deployment)) {
    EXPECT_EQ(arg.find("--metrics-secure"), std::string::npos);
    EXPECT_EQ(arg.find("--metrics-cert"), std::string::npos);
  }
  EXPECT_FALSE(chart.Find("ClusterRole", kFullname + "-metrics-auth"));
  EXPECT_FALSE(chart.Find("ClusterRole", kFullname + "-metrics-reader"));
  EXPECT_FALSE(chart.Find("ServiceAccount", kFullname + "-test-metrics"));
  const auto monitor = chart.Find("ServiceMonitor", kFullname);
  ASSERT_TRUE(monitor);
  EXPECT_FALSE((*monitor)["spec"]["endpoints"][0]["scheme"]);
  EXPECT_FALSE((*monitor)["spec"]["endpoints"][0]["tlsConfig"]);
  const auto pod = chart.Find("Pod", kFullname + "-test-metrics");
  ASSERT_TRUE(pod);
  EXPECT_FALSE((*pod)["spec"]["automountServiceAccountToken"].as<bool>(true));
}

TEST(HelmChart, MetricsSecureServesHttpsToTheMetricsReaderRole) {
  for (const std::string scope : {"cluster", "namespace"}) {
    SCOPED_TRACE("rbac.scope=" + scope);
    const RenderedChart chart =
        RenderChart({"--set", "metrics.secure=true", "--set", "serviceMonitor.enabled=true",
                     "--set", "rbac.scope=" + scope});
    ASSERT_EQ(chart.error, "");
    const auto deployment = chart.Find("Deployment", kFullname);
    ASSERT_TRUE(deployment);
    EXPECT_TRUE(Contains(Args(*deployment), "--metrics-secure"));
    for (const std::string& arg : Args(*deployment)) {
      EXPECT_EQ(arg.find("--metrics-cert-path"), std::string::npos) << "self-signed by default";
    }
    // The operator may create reviews (cluster-scoped in either scope), nothing more.
    const auto auth = chart.Find("ClusterRole", kFullname + "-metrics-auth");
    ASSERT_TRUE(auth);
    EXPECT_EQ(Grants(*auth), (std::set<Grant>{{"authentication.k8s.io", "tokenreviews", "create"},
                                             {"authorization.k8s.io", "subjectaccessreviews",
                                              "create"}}));
    const auto auth_binding = chart.Find("ClusterRoleBinding", kFullname + "-metrics-auth");
    ASSERT_TRUE(auth_binding);
    EXPECT_EQ((*auth_binding)["roleRef"]["name"].as<std::string>(), kFullname + "-metrics-auth");
    EXPECT_EQ((*auth_binding)["subjects"][0]["name"].as<std::string>(), kFullname);
    EXPECT_EQ((*auth_binding)["subjects"][0]["namespace"].as<std::string>(), kNamespace);
    // Scrapers: get on the non-resource URL /metrics, as kubebuilder's metrics-reader.
    const auto reader = chart.Find("ClusterRole", kFullname + "-metrics-reader");
    ASSERT_TRUE(reader);
    ASSERT_EQ((*reader)["rules"].size(), 1u);
    EXPECT_EQ(StringList((*reader)["rules"][0]["nonResourceURLs"]),
              std::vector<std::string>{"/metrics"});
    EXPECT_EQ(StringList((*reader)["rules"][0]["verbs"]), std::vector<std::string>{"get"});
    EXPECT_FALSE(chart.Find("ClusterRoleBinding", kFullname + "-metrics-reader"))
        << "bound only to metrics.readerSubjects";
    // Prometheus: https with its own ServiceAccount's token; the self-signed certificate is
    // not verified.
    const auto monitor = chart.Find("ServiceMonitor", kFullname);
    ASSERT_TRUE(monitor);
    const YAML::Node endpoint = (*monitor)["spec"]["endpoints"][0];
    EXPECT_EQ(endpoint["scheme"].as<std::string>(""), "https");
    EXPECT_EQ(endpoint["bearerTokenFile"].as<std::string>(""),
              "/var/run/secrets/kubernetes.io/serviceaccount/token");
    EXPECT_TRUE(endpoint["tlsConfig"]["insecureSkipVerify"].as<bool>(false));
    EXPECT_TRUE(endpoint["honorLabels"].as<bool>(false));
    // helm test: a ServiceAccount bound to the reader role for the test, the pod using it.
    const auto sa = chart.Find("ServiceAccount", kFullname + "-test-metrics");
    const auto test_binding = chart.Find("ClusterRoleBinding", kFullname + "-test-metrics");
    const auto pod = chart.Find("Pod", kFullname + "-test-metrics");
    ASSERT_TRUE(sa && test_binding && pod);
    for (const YAML::Node& hook : {*sa, *test_binding}) {
      EXPECT_EQ(hook["metadata"]["annotations"]["helm.sh/hook"].as<std::string>(""), "test");
      EXPECT_EQ(hook["metadata"]["annotations"]["helm.sh/hook-weight"].as<std::string>(""), "-1");
    }
    EXPECT_EQ((*test_binding)["roleRef"]["name"].as<std::string>(), kFullname + "-metrics-reader");
    EXPECT_EQ((*pod)["spec"]["serviceAccountName"].as<std::string>(""),
              kFullname + "-test-metrics");
    EXPECT_TRUE((*pod)["spec"]["automountServiceAccountToken"].as<bool>(false));
    const std::string script = (*pod)["spec"]["containers"][0]["args"][0].as<std::string>();
    EXPECT_NE(script.find("https://" + kFullname + "-metrics." + kNamespace + ".svc:8080/metrics"),
              std::string::npos)
        << script;
    EXPECT_NE(script.find("Authorization: Bearer $token"), std::string::npos);
    EXPECT_NE(script.find("[ \"$code\" = 401 ]"), std::string::npos);
  }
}

TEST(HelmChart, MetricsCertSecretIsMountedAndVerifiedByTheServiceMonitor) {
  const RenderedChart chart = RenderChart(
      {"--set", "metrics.secure=true", "--set", "metrics.certSecret=metrics-tls", "--set",
       "serviceMonitor.enabled=true"});
  ASSERT_EQ(chart.error, "");
  const auto deployment = chart.Find("Deployment", kFullname);
  ASSERT_TRUE(deployment);
  EXPECT_TRUE(Contains(Args(*deployment), "--metrics-cert-path=/etc/lockstep/metrics-certs"));
  bool mounted = false;
  for (const YAML::Node& m : OperatorContainer(*deployment)["volumeMounts"]) {
    if (m["name"].as<std::string>() != "metrics-certs") continue;
    mounted = true;
    EXPECT_EQ(m["mountPath"].as<std::string>(), "/etc/lockstep/metrics-certs");
    EXPECT_TRUE(m["readOnly"].as<bool>(false));
  }
  EXPECT_TRUE(mounted);
  bool volume = false;
  for (const YAML::Node& v : (*deployment)["spec"]["template"]["spec"]["volumes"]) {
    if (v["name"].as<std::string>() != "metrics-certs") continue;
    volume = true;
    EXPECT_EQ(v["secret"]["secretName"].as<std::string>(""), "metrics-tls");
  }
  EXPECT_TRUE(volume);
  const auto monitor = chart.Find("ServiceMonitor", kFullname);
  ASSERT_TRUE(monitor);
  const YAML::Node tls = (*monitor)["spec"]["endpoints"][0]["tlsConfig"];
  EXPECT_FALSE(tls["insecureSkipVerify"]);
  EXPECT_EQ(tls["serverName"].as<std::string>(""),
            kFullname + "-metrics." + kNamespace + ".svc");
  EXPECT_EQ(tls["ca"]["secret"]["name"].as<std::string>(""), "metrics-tls");
  EXPECT_EQ(tls["ca"]["secret"]["key"].as<std::string>(""), "ca.crt");
}

TEST(HelmChart, MetricsReaderSubjectsAndATlsConfigOfYourOwn) {
  const RenderedChart chart = RenderChart(
      {"--set", "metrics.secure=true", "--set", "serviceMonitor.enabled=true",
       "--set", "metrics.readerSubjects[0].kind=ServiceAccount",
       "--set", "metrics.readerSubjects[0].name=prometheus",
       "--set", "metrics.readerSubjects[0].namespace=monitoring",
       "--set", "serviceMonitor.tlsConfig.serverName=operator.example",
       "--set", "serviceMonitor.tlsConfig.ca.configMap.name=corp-ca",
       "--set", "serviceMonitor.tlsConfig.ca.configMap.key=ca.crt"});
  ASSERT_EQ(chart.error, "");
  const auto binding = chart.Find("ClusterRoleBinding", kFullname + "-metrics-reader");
  ASSERT_TRUE(binding);
  EXPECT_EQ((*binding)["roleRef"]["name"].as<std::string>(), kFullname + "-metrics-reader");
  ASSERT_EQ((*binding)["subjects"].size(), 1u);
  EXPECT_EQ((*binding)["subjects"][0]["name"].as<std::string>(), "prometheus");
  EXPECT_EQ((*binding)["subjects"][0]["namespace"].as<std::string>(), "monitoring");
  const auto monitor = chart.Find("ServiceMonitor", kFullname);
  ASSERT_TRUE(monitor);
  const YAML::Node tls = (*monitor)["spec"]["endpoints"][0]["tlsConfig"];
  EXPECT_EQ(tls["serverName"].as<std::string>(""), "operator.example");
  EXPECT_EQ(tls["ca"]["configMap"]["name"].as<std::string>(""), "corp-ca");
  EXPECT_FALSE(tls["insecureSkipVerify"]);
}

}  // namespace
}  // namespace lockstep::helmtest
