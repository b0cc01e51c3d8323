#!/usr/bin/env bash
# Smoke test of the local control plane (KUBECONFIG from hack/test.sh or `hack/cluster.sh env`):
# a pod bound to a kwok node runs and its IP routes nowhere off this machine; RBAC denies an
# unprivileged service account; deleting the namespace garbage-collects the pod.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the local control plane (hack/cluster.sh up)}"
NS="smoke-$$-$RANDOM"
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() { kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

# wait_for SECONDS CMD...: polls until CMD succeeds.
wait_for() {
  local limit="$1"; shift
  local deadline=$((SECONDS + limit))
  until "$@"; do (( SECONDS < deadline )) || return 1; sleep 0.5; done
}

kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS" >/dev/null 2>&1 ||
  fail "service-account controller did not create default SA"

node="$(kubectl get nodes -l type=kwok -o jsonpath='{.items[0].metadata.name}')"
[[ -n "$node" ]] || fail "no kwok node"
kubectl apply -n "$NS" -f - >/dev/null <<POD
apiVersion: v1
kind: Pod
metadata: {name: bound}
spec:
  nodeName: $node
  containers: [{name: c, image: example.invalid/none:1, command: ["sleep", "1"]}]
POD
pod_running() { [[ "$(kubectl get pod bound -n "$NS" -o jsonpath='{.status.phase}')" == Running ]]; }
wait_for 30 pod_running || fail "kwok did not run the pod on $node"
echo "ok: pod bound to $node is Running"

# Its IP is kwok's, simulated: a connect there (the operator polls worker-0's pod IP of every
# running job) must fail on this machine, never leave it through the default route.
ip="$(kubectl get pod bound -n "$NS" -o jsonpath='{.status.podIP}')"
[[ -n "$ip" ]] || fail "kwok gave the pod no IP"
if route="$(ip route get "$ip" 2>&1)"; then
  grep -q ' dev lo ' <<<"$route" || fail "a connect to pod IP $ip would leave this machine: $route"
fi
echo "ok: pod IP $ip does not route off this machine"

kubectl create serviceaccount nobody -n "$NS" >/dev/null
as=(--as "system:serviceaccount:$NS:nobody")
[[ "$(kubectl auth can-i list pods -n "$NS" "${as[@]}" 2>/dev/null || true)" == no ]] ||
  fail "unprivileged service account may list pods"
if out="$(kubectl get pods -n "$NS" "${as[@]}" 2>&1)"; then fail "RBAC allowed: $out"; fi
grep -q Forbidden <<<"$out" || fail "expected Forbidden, got: $out"
echo "ok: RBAC denies the unprivileged service account"

kubectl delete namespace "$NS" --wait=false >/dev/null
ns_gone() { ! kubectl get namespace "$NS" >/dev/null 2>&1; }
wait_for 90 ns_gone || fail "namespace $NS (and pod) not garbage-collected within 90s"
echo "ok: namespace deleted and its pod garbage-collected"
