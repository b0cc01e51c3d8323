// Table tests of the template merge (operator/api/template_merge.h; the rules' table is in
// docs/api.md "Templates"). Each case is a template spec, a job spec and the merged spec, in YAML.

#include "operator/api/template_merge.h"

#include <gtest/gtest.h>

#include "operator/api/codec.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

json Yaml(const std::string& text) { return testing::YamlToJson(YAML::Load(text)); }

struct MergeCase {
  std::string name;
  std::string template_spec;
  std::string job_spec;
  std::string want;
};

class TemplateMergeTest : public ::testing::TestWithParam<MergeCase> {};

TEST_P(TemplateMergeTest, Merges) {
  const MergeCase& c = GetParam();
  const json tmpl = Yaml(c.template_spec);
  const json job = Yaml(c.job_spec);
  StatusOr<json> merged = MergeTemplateSpec(tmpl, job);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(*merged, Yaml(c.want)) << merged->dump(1);
  EXPECT_EQ(tmpl, Yaml(c.template_spec));  // neither input changes
  EXPECT_EQ(job, Yaml(c.job_spec));
}

const char* const kPyTorchTemplate = R"(
framework: PyTorch
procsPerPod: 8
priorityClassName: training
placement: {topologyKeys: [topology.lockstep.dev/block, topology.lockstep.dev/rack]}
template:
  metadata: {labels: {team: ml, tier: gpu}}
  spec:
    nodeSelector: {gpu: h100}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    volumes: [{name: dshm, emptyDir: {medium: Memory}}]
    initContainers: [{name: warm, image: tools:1, command: [warm]}]
    containers:
    - name: trainer
      image: pytorch:2.5
      env: [{name: NCCL_DEBUG, value: WARN}, {name: NCCL_IB_HCA, value: mlx5}]
      resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      ports: [{containerPort: 29500, name: rdzv}]
    - name: exporter
      image: dcgm:3
)";

INSTANTIATE_TEST_SUITE_P(
    Table, TemplateMergeTest,
    ::testing::Values(
        MergeCase{"JobStatesOnlyCommandAndReplicas", kPyTorchTemplate, R"(
templateRef: {kind: ClusterTrainingTemplate, name: pytorch-8gpu}
replicas: 4
template: {spec: {containers: [{name: trainer, command: [python, train.py]}]}}
)",
                  R"(
framework: PyTorch
procsPerPod: 8
priorityClassName: training
replicas: 4
placement: {topologyKeys: [topology.lockstep.dev/block, topology.lockstep.dev/rack]}
template:
  metadata: {labels: {team: ml, tier: gpu}}
  spec:
    nodeSelector: {gpu: h100}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    volumes: [{name: dshm, emptyDir: {medium: Memory}}]
    initContainers: [{name: warm, image: tools:1, command: [warm]}]
    containers:
    - name: trainer
      image: pytorch:2.5
      command: [python, train.py]
      env: [{name: NCCL_DEBUG, value: WARN}, {name: NCCL_IB_HCA, value: mlx5}]
      resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      ports: [{containerPort: 29500, name: rdzv}]
    - name: exporter
      image: dcgm:3
)"},
        MergeCase{"ScalarsJobWins", kPyTorchTemplate, R"(
framework: JAX
procsPerPod: 4
priorityClassName: low
template:
  metadata: {labels: {tier: cpu}}
  spec:
    nodeSelector: {zone: b}
    containers: [{name: trainer, image: mine:1, command: [run], resources: {limits: {memory: 64Gi}}}]
)",
                  R"(
framework: JAX
procsPerPod: 4
priorityClassName: low
placement: {topologyKeys: [topology.lockstep.dev/block, topology.lockstep.dev/rack]}
template:
  metadata: {labels: {team: ml, tier: cpu}}
  spec:
    nodeSelector: {gpu: h100, zone: b}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    volumes: [{name: dshm, emptyDir: {medium: Memory}}]
    initContainers: [{name: warm, image: tools:1, command: [warm]}]
    containers:
    - name: trainer
      image: mine:1
      command: [run]
      env: [{name: NCCL_DEBUG, value: WARN}, {name: NCCL_IB_HCA, value: mlx5}]
      resources: {limits: {nvidia.com/gpu: 8, memory: 64Gi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      ports: [{containerPort: 29500, name: rdzv}]
    - name: exporter
      image: dcgm:3
)"},
        MergeCase{"KeyedListsMergeByKeyAndAppendNewOnes", R"(
template:
  spec:
    volumes: [{name: data, persistentVolumeClaim: {claimName: shared}}, {name: dshm, emptyDir: {}}]
    containers:
    - name: trainer
      image: t:1
      command: [a]
      args: [--x, --y]
      env: [{name: NCCL_DEBUG, value: WARN}, {name: NCCL_SOCKET_IFNAME, value: eth0}]
      volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
      ports: [{containerPort: 29500}]
)",
                  R"(
template:
  spec:
    volumes: [{name: data, persistentVolumeClaim: {claimName: mine}}, {name: ckpt, emptyDir: {}}]
    containers:
    - name: side
      image: s:1
    - name: trainer
      args: [--z]
      env:
      - {name: EXTRA, value: '1'}
      - {name: NCCL_DEBUG, valueFrom: {configMapKeyRef: {name: nccl, key: debug}}}
      volumeMounts: [{name: ckpt, mountPath: /ckpt}, {name: data, mountPath: /data, readOnly: false}]
      ports: [{containerPort: 29500, name: rdzv}, {containerPort: 8080}]
)",
                  R"(
template:
  spec:
    volumes:
    - {name: data, persistentVolumeClaim: {claimName: mine}}
    - {name: dshm, emptyDir: {}}
    - {name: ckpt, emptyDir: {}}
    containers:
    - name: trainer
      image: t:1
      command: [a]
      args: [--z]
      env:
      - {name: NCCL_DEBUG, valueFrom: {configMapKeyRef: {name: nccl, key: debug}}}
      - {name: NCCL_SOCKET_IFNAME, value: eth0}
      - {name: EXTRA, value: '1'}
      volumeMounts: [{name: data, mountPath: /data, readOnly: false}, {name: ckpt, mountPath: /ckpt}]
      ports: [{containerPort: 29500, name: rdzv}, {containerPort: 8080}]
    - name: side
      image: s:1
)"},
        MergeCase{"TolerationsAddUpWithoutDuplicates", R"(
template:
  spec:
    tolerations: [{key: a, operator: Exists}, {key: b, operator: Exists}]
    containers: [{name: trainer, image: t}]
)",
                  R"(
template:
  spec:
    tolerations: [{key: b, operator: Exists}, {key: c, operator: Exists}]
    containers: [{name: trainer, command: [x]}]
)",
                  R"(
template:
  spec:
    tolerations: [{key: a, operator: Exists}, {key: b, operator: Exists}, {key: c, operator: Exists}]
    containers: [{name: trainer, image: t, command: [x]}]
)"},
        MergeCase{"PlacementListIsTheJobsWhole", R"(
placement: {topologyKeys: [block, rack], requiredTopologyKey: block}
)",
                  R"(
placement: {topologyKeys: [rack]}
template: {spec: {containers: [{name: trainer, image: t, command: [x]}]}}
)",
                  R"(
placement: {topologyKeys: [rack], requiredTopologyKey: block}
template: {spec: {containers: [{name: trainer, image: t, command: [x]}]}}
)"},
        MergeCase{"JobsDefaultedPolicyFieldsYieldToTheTemplate", R"(
failurePolicy:
  maxRestarts: 10
  restartMode: Recreate
  hangTimeoutSeconds: 900
  backoff: {initialSeconds: 30}
  rules:
  - {name: oom, action: FailJob, onExitCodes: {operator: In, values: [137]}}
  - {action: RestartJob, onExitCodes: {operator: In, values: [3]}}
runPolicy: {cleanPodPolicy: All, activeDeadlineSeconds: 7200, ttlSecondsAfterFinished: 600}
)",
                  R"(
failurePolicy:
  maxRestarts: 3
  maxDisruptions: 20
  restartMode: InPlace
  inPlaceTimeoutSeconds: 60
  spareReplicas: 0
  backoff: {initialSeconds: 10, maxSeconds: 120, resetAfterSeconds: 600}
  rules:
  - {name: oom, action: RestartJob, onExitCodes: {operator: In, values: [137]}}
runPolicy: {suspend: true, cleanPodPolicy: Running, startupTimeoutSeconds: 600,
            activeDeadlineSeconds: 3600}
)",
                  R"(
failurePolicy:
  maxRestarts: 10
  maxDisruptions: 20
  restartMode: Recreate
  hangTimeoutSeconds: 900
  inPlaceTimeoutSeconds: 60
  spareReplicas: 0
  backoff: {initialSeconds: 30, maxSeconds: 120, resetAfterSeconds: 600}
  rules:
  - {name: oom, action: RestartJob, onExitCodes: {operator: In, values: [137]}}
  - {action: RestartJob, onExitCodes: {operator: In, values: [3]}}
runPolicy: {suspend: true, cleanPodPolicy: All, startupTimeoutSeconds: 600,
            activeDeadlineSeconds: 3600, ttlSecondsAfterFinished: 600}
)"},
        MergeCase{"TemplateCannotSuspendAJob", R"(
runPolicy: {suspend: true, startupTimeoutSeconds: 120}
)",
                  R"(
runPolicy: {suspend: false, startupTimeoutSeconds: 600}
)",
                  R"(
runPolicy: {suspend: false, startupTimeoutSeconds: 120}
)"},
        MergeCase{"EmptyTemplateIsTheJobWithoutTemplateRef", "{}", R"(
templateRef: {name: t}
framework: Generic
template: {spec: {containers: [{name: trainer, image: t, command: [x]}]}}
)",
                  R"(
framework: Generic
template: {spec: {containers: [{name: trainer, image: t, command: [x]}]}}
)"}),
    [](const ::testing::TestParamInfo<MergeCase>& param) { return param.param.name; });

struct ErrorCase {
  std::string name;
  std::string template_spec;
  std::string job_spec;
  std::string want;  // the error names this field
};

class TemplateMergeErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(TemplateMergeErrorTest, NamesTheField) {
  const ErrorCase& c = GetParam();
  StatusOr<json> merged = MergeTemplateSpec(Yaml(c.template_spec), Yaml(c.job_spec));
  ASSERT_FALSE(merged.ok()) << merged->dump();
  EXPECT_NE(std::string(merged.status().message()).find(c.want), std::string::npos)
      << merged.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, TemplateMergeErrorTest,
    ::testing::Values(
        ErrorCase{"JobContainerWithoutName",
                  "template: {spec: {containers: [{name: trainer, image: t}]}}",
                  "template: {spec: {containers: [{image: u}]}}",
                  "spec.template.spec.containers[0].name: required in the job"},
        ErrorCase{"TemplateEnvWithoutName",
                  "template: {spec: {containers: [{name: trainer, env: [{value: x}]}]}}",
                  "template: {spec: {containers: [{name: trainer, env: [{name: A}]}]}}",
                  "spec.template.spec.containers[0].env[0].name: required in the template"},
        ErrorCase{"TypeMismatch", "template: {spec: {nodeSelector: {a: b}}}",
                  "template: {spec: {nodeSelector: [a]}}",
                  "spec.template.spec.nodeSelector: the job has array, its template object"},
        ErrorCase{"UnknownTemplateField", "replicas: 3", "{}", "template spec.replicas"},
        ErrorCase{"PolicyNotAnObject", "failurePolicy: 3", "{}", "spec.failurePolicy"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param) { return param.param.name; });

TEST(TemplateRefTest, Decodes) {
  StatusOr<std::optional<TemplateRef>> none = DecodeTemplateRef(Yaml("{replicas: 1}"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  StatusOr<std::optional<TemplateRef>> cluster = DecodeTemplateRef(Yaml("templateRef: {name: a}"));
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(**cluster, (TemplateRef{"ClusterTrainingTemplate", "a"}));
  EXPECT_TRUE((*cluster)->cluster_scoped());
  EXPECT_EQ(Describe(**cluster), "ClusterTrainingTemplate/a");

  StatusOr<std::optional<TemplateRef>> ns =
      DecodeTemplateRef(Yaml("templateRef: {kind: TrainingTemplate, name: b}"));
  ASSERT_TRUE(ns.ok());
  EXPECT_FALSE((*ns)->cluster_scoped());

  for (const char* bad : {"templateRef: {kind: TrainingRuntime, name: a}", "templateRef: {}",
                          "templateRef: {name: ''}", "templateRef: x"}) {
    StatusOr<std::optional<TemplateRef>> r = DecodeTemplateRef(Yaml(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(std::string(r.status().message()).find("spec.templateRef"), std::string::npos)
        << r.status().message();
  }
}

// The merge of a job that states nothing over a template gives a spec the codec reads, with the
// template's policies: the defaults the apiserver wrote into the job do not hide them.
TEST(TemplateMergeDecodeTest, DefaultedJobDecodesToTheTemplatesPolicies) {
  json job = EncodeSpec(TrainingJobSpec{});  // every default, as the apiserver stores them
  job.erase("framework");
  job.erase("template");
  job["templateRef"] = {{"name", "t"}};
  job["template"] = Yaml("{spec: {containers: [{name: trainer, command: [x]}]}}");
  StatusOr<json> merged = MergeTemplateSpec(
      Yaml("{framework: PyTorch, failurePolicy: {maxRestarts: 7, restartMode: Recreate}, "
           "runPolicy: {cleanPodPolicy: None}, template: {spec: {containers: "
           "[{name: trainer, image: t}]}}}"),
      job);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  StatusOr<TrainingJobSpec> spec = DecodeSpec(*merged);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->framework, Framework::kPyTorch);
  EXPECT_EQ(spec->failure_policy.max_restarts, 7);
  EXPECT_EQ(spec->failure_policy.restart_mode, RestartMode::kRecreate);
  EXPECT_EQ(spec->failure_policy.max_disruptions, kDefaultMaxDisruptions);
  EXPECT_EQ(spec->run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  EXPECT_EQ(spec->pod_template["spec"]["containers"][0]["image"], "t");
}

}  // namespace
}  // namespace lockstep::api
