// crds/lockstep.dev_{clustertrainingtemplates,trainingtemplates}.yaml are generated from the
// TrainingJob CRD by this test, so a template's fields keep the job's schema, descriptions and
// CEL rules (docs/api.md "Templates"). It fails while a file differs from what it derives; to
// regenerate after a change to the TrainingJob CRD:
//
//   LOCKSTEP_UPDATE_CRDS=1 build/tests/api_unit_test --gtest_filter='TemplateCrdTest.*'
//   hack/sync-chart-crds.sh
//
// The derivation: the template's spec has the job's framework, procsPerPod, template, placement,
// priorityClassName, failurePolicy and runPolicy (without suspend); descriptions of those
// top-level fields say what a template's value does; the schema's defaults are dropped (a
// template states only what it means to set; the job's defaults apply after the merge);
// transition rules (oldSelf) are dropped (a template may be edited: running jobs use their
// snapshot); the trainer's image and command may be left to the job.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

struct Kind {
  std::string kind;
  std::string plural;
  std::string short_name;
  bool cluster = false;
};

const Kind kCluster{"ClusterTrainingTemplate", "clustertrainingtemplates", "ctt", true};
const Kind kNamespaced{"TrainingTemplate", "trainingtemplates", "tt", false};

std::string CrdPath(const Kind& k) { return "crds/lockstep.dev_" + k.plural + ".yaml"; }

void StripDefaults(YAML::Node node) {
  if (!node.IsMap()) return;
  node.remove("default");
  if (node["properties"]) {
    for (auto it = node["properties"].begin(); it != node["properties"].end(); ++it) {
      StripDefaults(it->second);
    }
  }
  if (node["items"]) StripDefaults(node["items"]);
}

// Drops every rule that compares with oldSelf (immutability), and the list when it empties.
void StripTransitionRules(YAML::Node node) {
  if (!node.IsMap()) return;
  if (node["x-kubernetes-validations"]) {
    YAML::Node kept(YAML::NodeType::Sequence);
    for (const YAML::Node& rule : node["x-kubernetes-validations"]) {
      if (rule["rule"].as<std::string>().find("oldSelf") == std::string::npos) kept.push_back(rule);
    }
    if (kept.size() == 0) {
      node.remove("x-kubernetes-validations");
    } else {
      node["x-kubernetes-validations"] = kept;
    }
  }
  if (node["properties"]) {
    for (auto it = node["properties"].begin(); it != node["properties"].end(); ++it) {
      StripTransitionRules(it->second);
    }
  }
  if (node["items"]) StripTransitionRules(node["items"]);
}

YAML::Node Field(const YAML::Node& job_spec, const std::string& name, const std::string& desc) {
  YAML::Node field = YAML::Clone(job_spec["properties"][name]);
  field["description"] = desc;
  StripTransitionRules(field);
  StripDefaults(field);
  return field;
}

// The trainer's image and command may come from the job; containers may come from the job alone.
void LoosenPodTemplate(YAML::Node tmpl) {
  YAML::Node pod_spec = tmpl["properties"]["spec"];
  pod_spec.remove("required");
  YAML::Node containers = pod_spec["properties"]["containers"];
  containers.remove("x-kubernetes-validations");  // the trainer's command: the merged spec's
  containers["minItems"] = 0;
  YAML::Node required(YAML::NodeType::Sequence);
  required.push_back("name");
  containers["items"]["required"] = required;
}

YAML::Node SpecSchema(const YAML::Node& job_spec) {
  YAML::Node spec;
  spec["type"] = "object";
  spec["description"] =
      "What every TrainingJob naming this template in spec.templateRef gets, unless the job "
      "states otherwise (docs/api.md \"Templates\": scalars the job's, containers, env and "
      "volumes merged by name). A job uses the template as it was when the job first started "
      "pods (status.resolvedTemplate); editing the template never changes a running job.";
  YAML::Node rules(YAML::NodeType::Sequence);
  YAML::Node pcn;
  pcn["rule"] =
      "!has(self.template) || !has(self.template.spec) || "
      "!has(self.template.spec.priorityClassName) || (has(self.priorityClassName) && "
      "self.template.spec.priorityClassName == self.priorityClassName)";
  pcn["message"] =
      "spec.template.spec.priorityClassName must equal spec.priorityClassName: name the class "
      "once, in spec.priorityClassName";
  pcn["fieldPath"] = ".template.spec.priorityClassName";
  pcn["reason"] = "FieldValueForbidden";
  rules.push_back(pcn);
  spec["x-kubernetes-validations"] = rules;
  YAML::Node p;
  p["framework"] = Field(job_spec, "framework",
                         "The framework of the jobs that do not state spec.framework.");
  p["procsPerPod"] = Field(job_spec, "procsPerPod",
                           "Training processes per worker pod for jobs that do not state "
                           "spec.procsPerPod (unset: the trainer's nvidia.com/gpu count, else 1).");
  p["template"] = Field(job_spec, "template",
                        "The worker PodTemplateSpec the job's spec.template is merged over: image, "
                        "NCCL/RDMA env, resources, tolerations, nodeSelector, volumes, sidecars. "
                        "Containers merge with the job's by name; the trainer (the merged first "
                        "container) must end up with an image and a command.");
  LoosenPodTemplate(p["template"]);
  p["placement"] = Field(job_spec, "placement",
                         "Topology levels for jobs that do not state them (spec.placement; the "
                         "job's topologyKeys list, when stated, replaces the template's).");
  p["priorityClassName"] = Field(job_spec, "priorityClassName",
                                 "The PriorityClass of jobs that do not state one.");
  p["failurePolicy"] = Field(job_spec, "failurePolicy",
                             "Failure handling defaults: a job's field that is unset (or at the "
                             "schema default) takes the template's; rules: the job's first, then "
                             "the template's.");
  p["runPolicy"] = Field(job_spec, "runPolicy",
                         "Run policy defaults (deadlines, TTL, cleanPodPolicy, startup timeout); "
                         "suspend stays the job's.");
  p["runPolicy"]["properties"].remove("suspend");
  spec["properties"] = p;
  return spec;
}

YAML::Node Derive(const YAML::Node& job_crd, const Kind& k) {
  const YAML::Node job_version = job_crd["spec"]["versions"][0];
  const YAML::Node job_schema = job_version["schema"]["openAPIV3Schema"];
  YAML::Node crd;
  crd["apiVersion"] = "apiextensions.k8s.io/v1";
  crd["kind"] = "CustomResourceDefinition";
  crd["metadata"]["name"] = k.plural + ".lockstep.dev";
  crd["metadata"]["labels"] = YAML::Clone(job_crd["metadata"]["labels"]);
  YAML::Node spec;
  spec["group"] = "lockstep.dev";
  spec["scope"] = k.cluster ? "Cluster" : "Namespaced";
  spec["names"]["kind"] = k.kind;
  spec["names"]["listKind"] = k.kind + "List";
  spec["names"]["plural"] = k.plural;
  spec["names"]["singular"] = k.plural.substr(0, k.plural.size() - 1);
  spec["names"]["shortNames"].push_back(k.short_name);
  spec["names"]["categories"].push_back("lockstep");
  YAML::Node version;
  version["name"] = job_version["name"];
  version["served"] = true;
  version["storage"] = true;
  YAML::Node framework_column;
  framework_column["name"] = "Framework";
  framework_column["type"] = "string";
  framework_column["jsonPath"] = ".spec.framework";
  framework_column["description"] = "The framework of the jobs using this template.";
  YAML::Node age_column;
  age_column["name"] = "Age";
  age_column["type"] = "date";
  age_column["jsonPath"] = ".metadata.creationTimestamp";
  version["additionalPrinterColumns"].push_back(framework_column);
  version["additionalPrinterColumns"].push_back(age_column);
  YAML::Node schema;
  schema["type"] = "object";
  schema["description"] =
      k.kind + " is what a platform team states once for many TrainingJobs" +
      (k.cluster ? " across the cluster" : " of one namespace") +
      " (the role of Kubeflow Trainer's " +
      (k.cluster ? "ClusterTrainingRuntime" : "TrainingRuntime") +
      "): framework, image, NCCL/RDMA environment, resources, tolerations, node selectors, "
      "topology levels, failure and run policy defaults, sidecars. A job names it in "
      "spec.templateRef {kind: " + k.kind + ", name} and states only what differs.";
  schema["required"].push_back("spec");
  schema["properties"]["apiVersion"] = YAML::Clone(job_schema["properties"]["apiVersion"]);
  schema["properties"]["kind"] = YAML::Clone(job_schema["properties"]["kind"]);
  schema["properties"]["metadata"] = YAML::Clone(job_schema["properties"]["metadata"]);
  schema["properties"]["spec"] = SpecSchema(job_schema["properties"]["spec"]);
  version["schema"]["openAPIV3Schema"] = schema;
  spec["versions"].push_back(version);
  crd["spec"] = spec;
  return crd;
}

std::string Render(const YAML::Node& crd, const Kind& k) {
  YAML::Emitter out;
  out << crd;
  return "# " + k.kind +
         ": generated from lockstep.dev_trainingjobs.yaml by tests/unit/api/"
         "template_crd_test.cc;\n# do not edit (LOCKSTEP_UPDATE_CRDS=1 regenerates it; see there)."
         "\n" +
         out.c_str() + "\n";
}

TEST(TemplateCrdTest, FilesAreGeneratedFromTheTrainingJobCrd) {
  const YAML::Node job_crd =
      YAML::LoadFile(testing::SourcePath("crds/lockstep.dev_trainingjobs.yaml"));
  const bool update = std::getenv("LOCKSTEP_UPDATE_CRDS") != nullptr;
  for (const Kind& k : {kCluster, kNamespaced}) {
    const std::string want = Render(Derive(job_crd, k), k);
    const std::string path = testing::SourcePath(CrdPath(k));
    if (update) {
      std::ofstream(path) << want;
      continue;
    }
    std::ifstream in(path);
    std::stringstream have;
    have << in.rdbuf();
    EXPECT_EQ(have.str(), want) << path << " is stale: LOCKSTEP_UPDATE_CRDS=1 regenerates it";
  }
}

}  // namespace
}  // namespace lockstep::api
