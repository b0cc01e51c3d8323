#!/usr/bin/env bash
# Kueue runs through the local cluster (hack/lib/cluster-kueue.sh): with a ResourceFlavor, a
# ClusterQueue of 8 nvidia.com/gpu and a LocalQueue,
#   1. a Workload of one pod asking 4 GPUs gets QuotaReserved and Admitted within 30 s (Kueue's
#      CRDs, its RBAC under its ServiceAccount, its scheduler);
#   2. a second one asking 8 stays pending, QuotaReserved=False with a message naming the quota;
#   3. a Workload only Kueue's validating webhook refuses (a container requesting the resource
#      `pods`, reserved by Kueue; the CRD's schema accepts it) is denied by vworkload.kb.io, so
#      the apiserver reached the webhook by its URL on 127.0.0.1.
# Everything it creates is deleted on exit. Needs $KUBECONFIG of a running local cluster and
# kubectl on PATH (hack/test.sh, or `eval "$(hack/cluster.sh up --with-kueue --name N)"`).
set -euo pipefail
skip() { echo "LOCKSTEP_TEST_SKIPPED: $*"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

[[ -n "${KUBECONFIG:-}" ]] ||
  skip "no KUBECONFIG (start a cluster: hack/cluster.sh up --with-kueue)"
command -v kubectl >/dev/null || fail "kubectl not on PATH"
# Kueue's validating webhook configuration is what `up --with-kueue` registers; without it the
# cluster runs no Kueue. With it, a Kueue that is down fails the test (the webhook refuses every
# Workload create), it is not skipped.
kubectl get validatingwebhookconfiguration kueue-validating-webhook-configuration \
  >/dev/null 2>&1 || skip "this cluster runs no Kueue (hack/cluster.sh up --with-kueue, or" \
  "hack/cluster.sh kueue; hack/test.sh adds it when hack/build-peers.sh kueue has built it)"

SUFFIX="$$-$RANDOM"
NS="kueue-cluster-$SUFFIX"
QUEUE="lockstep-kueue-test-$SUFFIX"  # the ResourceFlavor's and the ClusterQueue's name

cleanup() {
  kubectl delete workloads.kueue.x-k8s.io --all -n "$NS" --wait=true --timeout=30s \
    >/dev/null 2>&1 || true
  kubectl delete localqueue --all -n "$NS" --timeout=30s >/dev/null 2>&1 || true
  # Kueue removes the ClusterQueue's and the flavor's finalizers once nothing uses them.
  kubectl delete clusterqueue "$QUEUE" --timeout=30s >/dev/null 2>&1 || true
  kubectl delete resourceflavor "$QUEUE" --timeout=30s >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

# workload NAME GPUS [EXTRA_REQUEST]: a Workload of one pod asking GPUS nvidia.com/gpu.
workload() {
  cat <<WL
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: $1, namespace: $NS}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: trainer
          image: lockstep/examples:dev
          resources:
            requests: {nvidia.com/gpu: "$2"${3:+, $3}}
            limits: {nvidia.com/gpu: "$2"}
WL
}

# condition NAME TYPE FIELD: a field (status, message) of one condition of a Workload.
condition() {
  kubectl get workloads.kueue.x-k8s.io "$1" -n "$NS" \
    -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null || true
}

# wait_condition NAME TYPE STATUS SECONDS
wait_condition() {
  local deadline=$((SECONDS + $4))
  until [[ "$(condition "$1" "$2" status)" == "$3" ]]; do
    (( SECONDS < deadline )) || return 1
    sleep 0.5
  done
}

kubectl create namespace "$NS" >/dev/null
kubectl apply -f - >/dev/null <<QUEUES || fail "Kueue refused the queues (hack/cluster.sh status)"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: $QUEUE}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $QUEUE}
spec:
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: $NS}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $QUEUE
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: $NS}
spec: {clusterQueue: $QUEUE}
QUEUES
ok "ResourceFlavor and ClusterQueue $QUEUE (8 nvidia.com/gpu), LocalQueue $NS/lq"

started=$SECONDS
workload four 4 | kubectl create -f - >/dev/null
wait_condition four QuotaReserved True 30 ||
  fail "Workload 'four' (4 GPUs) got no quota within 30 s: $(condition four QuotaReserved message)"
wait_condition four Admitted True $((30 - (SECONDS - started))) ||
  fail "Workload 'four' (4 GPUs) not Admitted within 30 s: $(condition four Admitted message)"
ok "4 GPUs: QuotaReserved and Admitted in $((SECONDS - started)) s"

workload eight 8 | kubectl create -f - >/dev/null
wait_condition eight QuotaReserved False 30 ||
  fail "Workload 'eight' (8 GPUs) has no QuotaReserved=False within 30 s"
message="$(condition eight QuotaReserved message)"
[[ "$message" == *quota* && "$message" == *nvidia.com/gpu* ]] ||
  fail "QuotaReserved=False of 'eight' does not name the GPU quota: $message"
[[ "$(condition eight Admitted status)" != True ]] || fail "'eight' was admitted over quota"
ok "8 GPUs beside 4 of 8 pending: $message"

if out="$(workload reserved 1 'pods: "1"' | kubectl create -f - 2>&1)"; then
  fail "a Workload requesting the reserved resource 'pods' was accepted: $out"
fi
[[ "$out" == *'admission webhook "vworkload.kb.io" denied the request'* ]] ||
  fail "the invalid Workload was refused, but not by Kueue's webhook: $out"
ok "Kueue's validating webhook (by URL) refused the invalid Workload: ${out#*denied the request: }"
