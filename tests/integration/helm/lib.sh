# Helpers shared by the Helm integration tests (sourced). They run against the local control plane
# named by $KUBECONFIG (hack/test.sh, or `eval "$(hack/cluster.sh up --name N)"`), with helm and
# kubectl from PATH.
# shellcheck shell=bash disable=SC2034  # CHART, SUFFIX, CRD_FILE are for the sourcing scripts
: "${KUBECONFIG:?KUBECONFIG must point at the local control plane (hack/cluster.sh up)}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
CHART="$REPO/helm/lockstep"
CRD_NAME=trainingjobs.lockstep.dev
CRD_FILE=lockstep.dev_trainingjobs.yaml
SUFFIX="$$-$RANDOM"
# The Kubernetes the tests run on, for the commands that render without asking the cluster
# (helm template): the chart's kubeVersion refuses helm's default.
K8S_VERSION="$(source "$REPO/hack/lib/versions.sh" && echo "$K8S_VERSION")"

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# wait_for SECONDS CMD...: polls until CMD succeeds.
wait_for() {
  local limit="$1"; shift
  local deadline=$((SECONDS + limit))
  until "$@"; do (( SECONDS < deadline )) || return 1; sleep 0.5; done
}

require_tools() {
  local t
  for t in helm kubectl; do command -v "$t" >/dev/null || fail "$t not on PATH"; done
}

# adopt_crd RELEASE NAMESPACE: hand the CRD that other suites applied to a Helm release.
# shellcheck source=hack/lib/helm-crd.sh
source "$REPO/hack/lib/helm-crd.sh"

# Puts every CRD back to the source in crds/ (without Helm's ownership metadata), so the suites
# that run after this one see the schema they were written for. Never deletes one: that would
# delete every TrainingJob (or template) in the cluster. Then waits until they are Established,
# so a suite started right after never sees TrainingJobs unserved.
restore_crd() {
  local file crd
  for file in "$REPO"/crds/lockstep.dev_*.yaml; do
    kubectl replace --save-config -f "$file" >/dev/null 2>&1 ||
      kubectl create --save-config -f "$file" >/dev/null 2>&1 || true
  done
  for crd in "${LOCKSTEP_CRDS[@]}"; do
    kubectl wait --for=condition=Established --timeout=60s "crd/$crd" >/dev/null 2>&1 || true
  done
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# job_field NAMESPACE NAME JSONPATH: one field of a TrainingJob ("" when absent).
job_field() {
  kubectl get trainingjob "$2" -n "$1" -o jsonpath="{$3}" 2>/dev/null || true
}

# pods_of NAMESPACE JOB: "name<TAB>nodeName<TAB>phase" per pod of the job.
pods_of() {
  local fmt='{range .items[*]}{.metadata.name}{"\t"}{.spec.nodeName}{"\t"}'
  fmt+='{.status.phase}{"\n"}{end}'
  kubectl get pods -n "$1" -l lockstep.dev/job-name="$2" -o jsonpath="$fmt"
}

crd_established() {
  [[ "$(kubectl get crd "$CRD_NAME" \
        -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" == True ]]
}

# A TrainingJob small enough for the fake nodes: 2 workers with 1 GPU each.
training_job() {
  local name="$1" extra="${2:-}"
  cat <<JOB
apiVersion: lockstep.dev/v1alpha1
kind: TrainingJob
metadata:
  name: $name
spec:
  framework: PyTorch
  replicas: 2
$extra
  template:
    spec:
      containers:
      - name: trainer
        image: lockstep/examples:dev
        command: [python, -c, "print('hello')"]
        resources:
          limits: {nvidia.com/gpu: 1}
JOB
}
