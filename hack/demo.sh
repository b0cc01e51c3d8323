#!/usr/bin/env bash
# Lockstep's main command: prepares this machine, builds Lockstep, starts the local control plane
# with simulated GPU nodes, installs the TrainingJob API and shows how to use it. The cluster stays
# up until `hack/cluster.sh down --name lockstep-demo`.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_ROOT"
CLUSTER="${LOCKSTEP_DEMO_CLUSTER:-lockstep-demo}"

hack/setup.sh
log "building Lockstep"
export CCACHE_DIR="$LOCKSTEP_CACHE/ccache" CCACHE_BASEDIR="$REPO_ROOT" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
ninja -C build >/dev/null
eval "$(hack/cluster.sh up --name "$CLUSTER" --nodes 16 --gpus-per-node 8)"

shopt -s nullglob
crds=(crds/*.yaml)
if (( ${#crds[@]} > 0 )); then
  log "installing the TrainingJob CRD"
  kubectl apply --server-side -f crds/ >/dev/null
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
fi

# The operator and the examples (section kept by the job controller's owner).
STATE_DIR="$LOCKSTEP_CACHE/clusters/$CLUSTER"
OPERATOR_PID="$STATE_DIR/pids/operator"  # hack/cluster.sh down stops it
if [[ -f "$OPERATOR_PID" ]] && kill -0 "$(cat "$OPERATOR_PID")" 2>/dev/null; then
  kill "$(cat "$OPERATOR_PID")" && sleep 1
fi
log "starting lockstep-operator (log: $STATE_DIR/logs/operator.log)"
nohup build/bin/lockstep-operator --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address 127.0.0.1:38080 --health-probe-bind-address 127.0.0.1:38081 \
  --launcher-image lockstep/launcher:dev --node-lease-grace "${LOCKSTEP_DEMO_LEASE_GRACE:-15s}" \
  >"$STATE_DIR/logs/operator.log" 2>&1 &
echo $! >"$OPERATOR_PID"
for _ in $(seq 1 100); do
  curl -fsS http://127.0.0.1:38081/readyz >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS http://127.0.0.1:38081/readyz >/dev/null || die "the operator did not become ready"
examples=(examples/*.yaml)
if (( ${#examples[@]} > 0 )); then
  log "applying the examples"
  kubectl apply -f examples/ >/dev/null
  sleep 3
  echo
  kubectl get tj
  echo
  kubectl get pods -L lockstep.dev/role | sed -n 1,20p  # sed reads it all: no SIGPIPE under pipefail
fi

# The gang scheduler at work: a 6-pod x 8-GPU job cannot fit beside the examples, so it waits
# with none of its pods bound and says why; when two examples end, it is placed whole.
show_gang_wait_then_place() {
  kubectl delete tj big-gang --ignore-not-found >/dev/null  # a rerun starts the story afresh
  log "submitting big-gang: 6 pods x 8 GPUs, more than is free"
  sed -e 's/name: pytorch-ddp/name: big-gang/' -e 's/replicas: 4 /replicas: 6 /' \
    examples/pytorch-ddp.yaml | kubectl apply -f - >/dev/null
  local msg=""
  for _ in $(seq 1 50); do
    msg="$(kubectl get tj big-gang -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].message}')"
    [[ -n "$msg" && "$msg" != *"waiting for the gang scheduler"* ]] && break
    sleep 0.2
  done
  echo
  echo "big-gang waits, zero pods bound: $msg"
  echo "  bound pods: $(kubectl get pods -l lockstep.dev/job-name=big-gang \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true)"
  log "deleting the pytorch-ddp and horovod examples to free 8 nodes"
  kubectl delete tj pytorch-ddp horovod --wait=false >/dev/null
  for _ in $(seq 1 150); do
    [[ "$(kubectl get tj big-gang -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].status}')" == True ]] && break
    sleep 0.2
  done
  echo "big-gang: $(kubectl get tj big-gang -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].message}')"
  kubectl get events --field-selector involvedObject.name=big-gang --sort-by=.lastTimestamp | tail -4
}
if [[ -f examples/pytorch-ddp.yaml ]]; then show_gang_wait_then_place; fi

# A node dies under a running job: its Lease is no longer renewed (kwok v0.7 keeps renewing after
# its annotation is removed, so an admission policy refuses kwok's writes to a Lease and Node
# labeled lockstep.dev/heartbeat=stopped). The operator's node detector notices after
# --node-lease-grace (15 s here; kwok renews every 10 s), restarts the whole gang as a new attempt
# on other nodes, keeps the dead node out of its placements, and says why in an event. Stock
# Kubernetes would only mark the node unreachable after 50 s and evict its pods 300 s later.
tj_field() { kubectl get tj "$1" -o jsonpath="{$2}" 2>/dev/null || true; }
show_node_loss_and_recovery() {
  local job="$1" attempt node started
  for _ in $(seq 1 150); do [[ "$(tj_field "$job" .status.state)" == Running ]] && break; sleep 0.2; done
  [[ "$(tj_field "$job" .status.state)" == Running ]] || { log "$job is not running; skipping the node-loss step"; return 0; }
  attempt="$(tj_field "$job" .status.attempt)"; attempt="${attempt:-0}"
  node="$(kubectl get pods -l "lockstep.dev/job-name=$job,lockstep.dev/attempt=$attempt" \
    -o jsonpath='{.items[0].spec.nodeName}')"
  echo
  kubectl apply --server-side -f tests/integration/failures/stop-heartbeat-policy.yaml >/dev/null
  sleep 1  # the apiserver loads a new admission policy asynchronously
  log "killing $node under $job (attempt $attempt): its Lease is no longer renewed"
  kubectl label lease -n kube-node-lease "$node" lockstep.dev/heartbeat=stopped >/dev/null
  kubectl label node "$node" lockstep.dev/heartbeat=stopped >/dev/null
  started=$SECONDS
  for _ in $(seq 1 450); do
    [[ "$(tj_field "$job" .status.attempt)" -gt "$attempt" && \
       "$(tj_field "$job" .status.state)" == Running ]] && break
    sleep 0.2
  done
  echo "$job: state $(tj_field "$job" .status.state), attempt $(tj_field "$job" .status.attempt)," \
    "$((SECONDS - started)) s after $node stopped; its pods now on:"
  kubectl get pods -l "lockstep.dev/job-name=$job" \
    -o 'custom-columns=POD:.metadata.name,ATTEMPT:.metadata.labels.lockstep\.dev/attempt,NODE:.spec.nodeName,PHASE:.status.phase'
  echo "why (status.lastRestart): $(tj_field "$job" .status.lastRestart)"
  echo "excluded: $(tj_field "$job" .status.excludedNodes)"
  kubectl get events --field-selector "involvedObject.name=$job,reason=NodeLeaseExpired"
  log "restoring $node (its heartbeat resumes; the job keeps it excluded for its cool-down)"
  kubectl label lease -n kube-node-lease "$node" lockstep.dev/heartbeat- >/dev/null
  kubectl label node "$node" lockstep.dev/heartbeat- >/dev/null
}
if [[ -f examples/pytorch-ddp.yaml ]]; then show_node_loss_and_recovery big-gang; fi

echo
echo "The local cluster '$CLUSTER' is up:"
kubectl get nodes -L topology.lockstep.dev/block,topology.lockstep.dev/rack | sed -n 1,6p
echo "..."
echo
echo "Use it from this shell with:"
echo "  eval \"\$(hack/cluster.sh env --name $CLUSTER)\""
echo "  kubectl get nodes; kubectl get trainingjobs"
echo "Operator metrics: curl -s 127.0.0.1:38080/metrics | grep ^lockstep_"
echo "Stop everything (operator included) with: hack/cluster.sh down --name $CLUSTER"
