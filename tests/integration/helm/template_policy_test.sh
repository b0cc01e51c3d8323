#!/usr/bin/env bash
# The chart's template policy (templates/template-policy.yaml, issue 44 item 7) against the real
# API server: what a TrainingJob template may not grant its author unless the namespace allows it.
# Server-side dry runs (nothing is created) of jobs whose template asks for hostNetwork, a
# privileged init container, a hostPath volume (in a role's template) or a service account:
# refused in a plain namespace with the field named; accepted where the namespace's label or
# annotation allows it; an ordinary job accepted everywhere.
#
#   template_policy_test.sh
#
# Isolated (runs beside other tests): the policy is bound only to namespaces carrying this run's
# label (templatePolicy.namespaceSelector), its release installs nothing else that acts
# (crds.install=false, rbac.create=false, no ServiceAccount; its one operator pod, with no
# grants, stays Pending: no kube-scheduler places it here).
set -euo pipefail
# shellcheck source=tests/integration/helm/lib.sh
source "$(dirname "$0")/lib.sh"
require_tools

NS="lockstep-tpol-$SUFFIX"
PLAIN="lockstep-tpol-plain-$SUFFIX"
HOST="lockstep-tpol-host-$SUFFIX"
RELEASE="ls-tpol-$RANDOM"
RUN_LABEL="lockstep.dev/template-policy-test=$SUFFIX"
WORK="$(mktemp -d)"
cleanup() {
  helm uninstall "$RELEASE" -n "$NS" >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" "$PLAIN" "$HOST" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

crd_established || {
  kubectl apply --server-side --force-conflicts -f "$REPO/crds/" >/dev/null
  wait_for 60 crd_established || fail "CRD not Established"
}
for ns in "$NS" "$PLAIN" "$HOST"; do kubectl create namespace "$ns" >/dev/null; done
kubectl label namespace "$PLAIN" "$RUN_LABEL" >/dev/null
kubectl label namespace "$HOST" "$RUN_LABEL" lockstep.dev/allow-host-access=true >/dev/null
kubectl annotate namespace "$HOST" lockstep.dev/allowed-service-accounts="reader, trainer" >/dev/null
helm install "$RELEASE" "$CHART" -n "$NS" --set crds.install=false --set rbac.create=false \
  --set serviceAccount.create=false --set replicaCount=1 --set podDisruptionBudget.enabled=false \
  --set "templatePolicy.namespaceSelector.matchLabels.lockstep\.dev/template-policy-test=$SUFFIX" \
  >"$WORK/install.out" 2>&1 || { cat "$WORK/install.out"; fail "helm install"; }

# job NAMESPACE TEMPLATE_SPEC_EXTRA CONTAINER_EXTRA [ROLE_SPEC_EXTRA]: a PyTorch job whose worker
# template adds the given YAML (JSON fragments), and a "ps" role whose template adds the last.
job() {
  cat <<JOB
{"apiVersion": "lockstep.dev/v1alpha1", "kind": "TrainingJob",
 "metadata": {"name": "tpol", "namespace": "$1"},
 "spec": {"framework": "PyTorch", "replicas": 2,
  "template": {"spec": {$2 "containers": [{"name": "trainer", "image": "busybox",
                                           "command": ["python", "train.py"] $3}]}},
  "roles": [{"name": "ps", "replicas": 1,
             "template": {"spec": {${4:-} "containers": [{"name": "ps", "image": "busybox", "command": ["python", "ps.py"]}]}}}]}}
JOB
}
# dry_run NAMESPACE ...: the apiserver's answer to a server-side dry run of `job NAMESPACE ...`.
dry_run() { job "$@" | kubectl apply --dry-run=server -f - 2>&1 || true; }

# The policy is live once the apiserver's admission has loaded it: wait on its first refusal.
policy_live() { [[ "$(dry_run "$PLAIN" '"hostNetwork": true,' '')" == *"hostNetwork"* ]]; }
wait_for 60 policy_live || fail "the template policy never refused hostNetwork: $(dry_run "$PLAIN" '"hostNetwork": true,' '')"

# expect_refused WHAT FIELD NAMESPACE ...: refused, the message naming FIELD.
expect_refused() {
  local what="$1" field="$2" answer; shift 2
  answer="$(dry_run "$@")"
  [[ "$answer" == *"denied request"* && "$answer" == *"$field"* ]] ||
    fail "$what in $1: want a refusal naming $field, got: $answer"
  ok "$what refused in $1: ${answer##*denied request: }"
}
expect_accepted() {
  local what="$1" answer; shift
  answer="$(dry_run "$@")"
  [[ "$answer" == *"created (server dry run)"* ]] || fail "$what in $1: want accepted, got: $answer"
  ok "$what accepted in $1"
}

expect_accepted "an ordinary job" "$PLAIN" '' ''
expect_refused "hostNetwork" hostNetwork "$PLAIN" '"hostNetwork": true,' ''
expect_refused "hostPID" hostPID "$PLAIN" '"hostPID": true,' ''
expect_refused "a privileged init container" privileged "$PLAIN" \
  '"initContainers": [{"name": "setup", "image": "busybox", "securityContext": {"privileged": true}}],' ''
expect_refused "a role's hostPath volume" hostPath "$PLAIN" '' '' \
  '"volumes": [{"name": "data", "hostPath": {"path": "/data"}}],'
expect_refused "service account builder" "serviceAccountName" "$PLAIN" '"serviceAccountName": "builder",' ''
expect_accepted "service account default" "$PLAIN" '"serviceAccountName": "default",' ''
expect_accepted "hostNetwork where allowed" "$HOST" '"hostNetwork": true,' ''
expect_accepted "a role's hostPath where allowed" "$HOST" '' '' \
  '"volumes": [{"name": "data", "hostPath": {"path": "/data"}}],'
expect_accepted "service account trainer, listed" "$HOST" '"serviceAccountName": "trainer",' ''
expect_refused "service account builder, not listed" "builder" "$HOST" '"serviceAccountName": "builder",' ''
# The policy's scope: a namespace without this run's label is not its business. Another test's
# release may hold a policy of its own over every namespace (the RUN_SERIAL chart tests do, while
# they run), so what is checked is that this release's policy says nothing.
answer="$(dry_run "$NS" '"hostNetwork": true,' '')"
[[ "$answer" != *"$RELEASE-lockstep-trainingjob-templates"* ]] ||
  fail "this release's policy refused a job outside its namespaces: $answer"
ok "hostNetwork outside the policy's namespaces: not this release's to refuse"
echo "template policy test passed"
