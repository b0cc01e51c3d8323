#include "tests/unit/helm/rendered_chart.h"

#include "tests/unit/helm/command.h"

namespace lockstep::helmtest {

std::vector<YAML::Node> RenderedChart::OfKind(const std::string& kind) const {
  std::vector<YAML::Node> found;
  for (const YAML::Node& doc : docs) {
    if (doc["kind"] && doc["kind"].as<std::string>() == kind) found.push_back(doc);
  }
  return found;
}

std::optional<YAML::Node> RenderedChart::Find(const std::string& kind,
                                              const std::string& name) const {
  for (const YAML::Node& doc : OfKind(kind)) {
    if (doc["metadata"]["name"].as<std::string>() == name) return doc;
  }
  return std::nullopt;
}

const std::string& TestedKubeVersion() {
  static const std::string* version = [] {
    const CommandResult run = RunCommand(
        {"bash", "-c", "source " + SourcePath("hack/lib/versions.sh") + " && printf %s \"$K8S_VERSION\""});
    return new std::string(run.ok() ? run.out : "");
  }();
  return *version;
}

RenderedChart RenderChart(const std::vector<std::string>& args) {
  // As for the Kubernetes the tests run on: the chart's kubeVersion refuses helm's built-in
  // default (v1.20 in a helm built without its release ldflags).
  std::vector<std::string> argv = {HelmBinary(), "template", kRelease,
                                   SourcePath("helm/lockstep"), "--namespace", kNamespace,
                                   "--kube-version", TestedKubeVersion()};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult run = RunCommand(argv);
  RenderedChart chart;
  if (!run.ok()) {
    chart.error = "helm template failed (" + std::to_string(run.exit_code) + "): " + run.err;
    return chart;
  }
  try {
    for (const YAML::Node& doc : YAML::LoadAll(run.out)) {
      if (doc.IsMap()) chart.docs.push_back(doc);
    }
  } catch (const YAML::Exception& e) {
    chart.error = std::string("rendered chart is not YAML: ") + e.what();
  }
  return chart;
}

std::set<Grant> Grants(const YAML::Node& role) {
  std::set<Grant> grants;
  for (const YAML::Node& rule : role["rules"]) {
    for (const std::string& group : StringList(rule["apiGroups"])) {
      for (const std::string& resource : StringList(rule["resources"])) {
        for (const std::string& verb : StringList(rule["verbs"])) {
          grants.emplace(group, resource, verb);
        }
      }
    }
  }
  return grants;
}

std::vector<std::string> StringList(const YAML::Node& sequence) {
  std::vector<std::string> values;
  if (!sequence || !sequence.IsSequence()) return values;
  for (const YAML::Node& item : sequence) values.push_back(item.as<std::string>());
  return values;
}

}  // namespace lockstep::helmtest
