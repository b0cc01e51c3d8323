#!/usr/bin/env bash
# Lockstep's main command: prepares this machine, builds Lockstep and its two images
# (hack/build-images.sh), starts the local control plane with 4 agent nodes whose pods really run
# (lockstep-test-node-agent, docs/e2e.md), installs Lockstep with its Helm chart (both operator
# replicas run from the operator image on agent nodes; deleting the leader's pod hands over),
# trains examples/local/pytorch-ddp.yaml (PyTorch DDP, 2 pods x 2 processes, gloo on CPU, the
# launcher copied from the launcher image) to Succeeded while `kubectl get tj -w` runs, kills a
# node under the job halfway and shows the recovery: detection, the gang running again elsewhere
# as the next attempt, training resumed from its checkpoint. The cluster stays up until
# `hack/cluster.sh down --name lockstep-demo`; a rerun on it starts the story afresh.
#
# Environment: LOCKSTEP_DEMO_CLUSTER (lockstep-demo), LOCKSTEP_BUILD_DIR (build),
# LOCKSTEP_DEMO_LEASE_GRACE (5s), LOCKSTEP_DEMO_EPOCHS (12).
# Needs root for the agent's namespaces and bridge and for the images' root-owned files (sudo
# otherwise).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_ROOT"
CLUSTER_NAME="${LOCKSTEP_DEMO_CLUSTER:-lockstep-demo}"
STATE="$LOCKSTEP_CACHE/clusters/$CLUSTER_NAME"
BUILD="$(realpath -m "${LOCKSTEP_BUILD_DIR:-build}")"
DEMO_LEASE_GRACE="${LOCKSTEP_DEMO_LEASE_GRACE:-5s}"
DEMO_METRICS_ADDR=""  # the leading operator pod's <ip>:8080, once it runs
EPOCHS="${LOCKSTEP_DEMO_EPOCHS:-12}"
EXAMPLE=examples/local/pytorch-ddp.yaml
AGENT_NODES=4
source "$REPO_ROOT/hack/lib/cluster-components.sh"  # stop_component, component_alive
source "$REPO_ROOT/hack/lib/cluster-agent.sh"
source "$REPO_ROOT/hack/lib/demo-lockstep.sh"
source "$REPO_ROOT/hack/lib/helm-crd.sh"        # adopt_crd
source "$REPO_ROOT/hack/lib/build.sh"           # configure_and_build
DEMO_STARTED=$SECONDS

# step NAME: starts the next of the story's steps, saying how long the last one took.
STEP_NAME="" STEP_STARTED=$SECONDS
step() {
  end_step
  STEP_NAME="${*%% *}" STEP_STARTED=$SECONDS
  echo; log "== $*"
}
end_step() { [[ -z "$STEP_NAME" ]] || log "== step $STEP_NAME done in $((SECONDS - STEP_STARTED)) s"; }

build() {
  step "1/6 setting up this machine and building Lockstep into $BUILD"
  hack/setup.sh
  # Only what the demo runs; hack/test.sh builds everything.
  log "building $BUILD (a few minutes the first time, seconds from ccache)"
  configure_and_build "$BUILD" -- lockstep-operator lockstep-launcher lockstep-test-node-agent
  log "packing the operator and launcher images into $BUILD/images (hack/build-images.sh)"
  as_root env "PATH=$PATH" "$REPO_ROOT/hack/build-images.sh" --build-dir "$BUILD" --no-build
}

# A job (and its pods) from an earlier run would confuse the story; the agent may be gone, so
# pods it can no longer finish are force-deleted.
delete_demo_jobs() {
  kubectl get crd trainingjobs.lockstep.dev >/dev/null 2>&1 || return 0
  local job
  for job in "$JOB" big-gang; do
    kubectl delete tj "$job" --ignore-not-found --timeout=30s >/dev/null 2>&1 || true
    kubectl delete pods -l "lockstep.dev/job-name=$job" --ignore-not-found --timeout=30s \
      >/dev/null 2>&1 || kubectl delete pods -l "lockstep.dev/job-name=$job" --force \
      --grace-period=0 >/dev/null 2>&1 || true
  done
}

start_cluster() {
  step "2/6 local control plane '$CLUSTER_NAME' with $AGENT_NODES agent nodes"
  eval "$(hack/cluster.sh up --name "$CLUSTER_NAME" --nodes 0)"
  JOB="$(kubectl patch --local -f "$EXAMPLE" --type merge -p '{}' -o jsonpath='{.metadata.name}')"
  delete_demo_jobs
  # kwok nodes (left by an earlier version of this demo) renew their Leases every 10 s, too
  # slowly for the demo's 5 s grace: the operator would keep finding them lost.
  local kwok; kwok="$(kubectl get nodes -l type=kwok -o name | grep -c . || true)"
  if (( kwok > 0 )); then
    log "deleting the $kwok kwok nodes an earlier demo left in '$CLUSTER_NAME'"
    kubectl delete nodes -l type=kwok --wait=false >/dev/null
  fi
  # A fresh agent every run: the node killed by the previous run comes back.
  agent_stop
  agent_leftovers >/dev/null || die "the previous test node agent left: $(agent_leftovers | tr '\n' ';')"
  forget_old_operators
  # shellcheck disable=SC2046  # one flag or value per word
  agent_start "$AGENT_NODES" "$BUILD" $(demo_agent_flags)
  echo "  lockstep-test-node-agent (pid $(cat "$AGENT_PIDFILE"), bridge $AGENT_BRIDGE," \
    "$AGENT_SUBNET) runs every pod bound to these nodes in its own namespaces: images it holds" \
    "(lockstep/operator, lockstep/launcher) with runc, the training image's commands as processes:"
  kubectl get nodes -l lockstep.dev/test-node-agent=true \
    -o 'custom-columns=NODE:.metadata.name,GPUS (pretend):.status.capacity.nvidia\.com/gpu,READY:.status.conditions[?(@.type=="Ready")].status' |
    sed 's/^/    /'
}

install_lockstep() {
  step "3/6 installing Lockstep with the Helm chart (helm/lockstep, CRD included)"
  install_chart
  echo "  release $DEMO_RELEASE in $DEMO_NAMESPACE:" \
    "$(helm status "$DEMO_RELEASE" -n "$DEMO_NAMESPACE" | awk '/^(STATUS|REVISION):/' | tr '\n' ' ')" \
    "(chart defaults: 2 replicas, leader election; --node-lease-grace=$DEMO_LEASE_GRACE)"
  wait_for_operators
  show_hand_over
}

# `kubectl get tj -w` in the background, one timestamped line per change, until stop_watch. The
# field selector lets it start before the job exists; custom columns print <none> for an unset
# field, where the default columns would shift.
start_watch() {
  local columns='NAME:.metadata.name,STATE:.status.state,WORKERS:.status.workersReady'
  columns+=',ATTEMPT:.status.attempt,DISRUPTIONS:.status.restarts.disruptions'
  echo "  \$ kubectl get tj -w --field-selector metadata.name=$JOB -o custom-columns=$columns"
  timeout 900 kubectl get tj -w --field-selector "metadata.name=$JOB" -o "custom-columns=$columns" \
    2>/dev/null > >(
    last=""
    while read -r name state workers attempt disruptions; do
      [[ "$state $workers $attempt $disruptions" != "$last" ]] || continue
      last="$state $workers $attempt $disruptions"
      printf '  | %(%H:%M:%S)T  %-12s %-11s %-8s %-8s %s\n' -1 "$name" "$state" "$workers" \
        "$attempt" "$disruptions"
    done) &
  WATCH_PID=$!
}
stop_watch() { if [[ -n "${WATCH_PID:-}" ]]; then kill "$WATCH_PID" 2>/dev/null || true; WATCH_PID=""; fi; }
trap stop_watch EXIT

tj_field() { kubectl get tj "$JOB" -o jsonpath="{$1}" 2>/dev/null || true; }

# wait_for SECONDS DESCRIPTION CMD...: polls CMD every 0.5 s; fails the demo with the operator's
# last log lines when it does not succeed in time.
wait_for() {
  local limit="$1" what="$2"; shift 2
  local deadline=$((SECONDS + limit))
  until "$@"; do
    if (( SECONDS >= deadline )); then
      kubectl get tj,pods -o wide >&2 || true
      kubectl -n "$DEMO_NAMESPACE" get pods -o wide >&2 || true
      operator_log | tail -20 >&2 || true
      die "gave up after ${limit}s waiting for $what"
    fi
    sleep 0.5
  done
}
job_is() { [[ "$(tj_field .status.state)" == "$1" ]]; }
attempt() { local a; a="$(tj_field .status.attempt)"; echo "${a:-0}"; }  # 0 is omitted
running_attempt() { job_is Running && [[ "$(attempt)" == "$1" ]]; }

# The trainer's log of a pod, as a user reads it: the apiserver proxies `kubectl logs` to the
# agent's kubelet endpoint (docs/e2e.md).
trainer_log() { kubectl logs "$1" -c trainer 2>/dev/null || true; }
job_log_has() { trainer_log "$JOB-worker-0" | grep -q "$1"; }

# The example as it is, trained longer than its smoke-test default so that a node can die
# mid-run, and checkpointing into this cluster's state dir (removed by `down`).
submit_job() {
  step "4/6 training $JOB ($EXAMPLE): 2 pods x 2 processes, gloo on CPU, $EPOCHS epochs, a checkpoint each epoch"
  CHECKPOINTS="$STATE/checkpoints/$JOB"
  rm -rf "$CHECKPOINTS" && mkdir -p "$CHECKPOINTS"  # hostPath: the agent does not create it
  # The chart's template policy refuses hostPath volumes unless the namespace allows host access
  # (docs/install.md): here every node is this machine and the checkpoints live on it.
  kubectl label namespace default lockstep.dev/allow-host-access=true --overwrite >/dev/null
  start_watch
  kubectl patch --local -f "$EXAMPLE" --type json -o yaml -p "[
    {\"op\": \"replace\", \"path\": \"/spec/template/spec/containers/0/args\", \"value\":
      [\"--epochs\", \"$EPOCHS\", \"--steps-per-epoch\", \"200\", \"--batch-size\", \"16\",
       \"--checkpoint-dir\", \"/checkpoints\"]},
    {\"op\": \"test\", \"path\": \"/spec/template/spec/volumes/0/name\", \"value\": \"checkpoints\"},
    {\"op\": \"replace\", \"path\": \"/spec/template/spec/volumes/0/hostPath/path\", \"value\": \"$CHECKPOINTS\"}
  ]" | kubectl apply -f - >/dev/null
  wait_for 120 "$JOB to run" running_attempt 0
  local pod
  for pod in "$JOB-worker-0" "$JOB-worker-1"; do
    echo "  $pod: its init container copied the launcher from" \
      "$(kubectl get pod "$pod" -o jsonpath='{.status.initContainerStatuses[0].imageID}') with runc"
  done
  wait_for 180 "the first checkpoint" test -f "$CHECKPOINTS/checkpoint.pt"
  echo "  rank 0 wrote its first checkpoint at $(date -r "$CHECKPOINTS/checkpoint.pt" +%T)"
}

# A dead machine under the running job: the agent SIGKILLs every process of the node's pods and
# stops its heartbeats. The operator's node detector notices after --node-lease-grace, restarts
# the whole gang as the next attempt on other nodes and keeps the dead one out of its placements.
kill_node_and_recover() {
  local node started detected="" leader leader_node
  node="$(kubectl get pod "$JOB-worker-0" -o jsonpath='{.spec.nodeName}')"
  leader="$(leader_pod)"
  leader_node="$(kubectl -n "$DEMO_NAMESPACE" get pod "$leader" -o jsonpath='{.spec.nodeName}')"
  step "5/6 $node dies under $JOB (lockstep-test-node-agent --fail-node $node)"
  # The gang scheduler packs by best fit, so the job often shares a node with an operator pod.
  [[ "$leader_node" != "$node" ]] ||
    echo "  $node also runs the operator's leader $leader: the standby must take the Lease first"
  as_root "$BUILD/bin/lockstep-test-node-agent" --fail-node "$node" --state-dir "$AGENT_STATE_DIR"
  started=$SECONDS
  until [[ "$(attempt)" == 1 ]]; do
    (( SECONDS - started < 60 )) || die "no restart 60 s after $node died"
    sleep 0.2
  done
  detected=$((SECONDS - started))
  wait_for 60 "attempt 1 to run" running_attempt 1
  RECOVERY_S=$((SECONDS - started))
  echo "  restart decided ${detected} s after the failure; attempt 1 Running ${RECOVERY_S} s after it"
  if [[ "$leader_node" == "$node" ]]; then
    echo "  (decided by $(leader_pod), which took the Lease when $leader's renewals stopped)"
  fi
  echo "  event: $(kubectl get events --field-selector "involvedObject.name=$JOB,reason=NodeLeaseExpired" \
    -o jsonpath='{.items[-1:].reason}: {.items[-1:].message}')"
  echo "  status.lastRestart: $(tj_field .status.lastRestart)"
  echo "  the gang, all pods of the new attempt:"
  kubectl get pods -l "lockstep.dev/job-name=$JOB" \
    -o 'custom-columns=POD:.metadata.name,ATTEMPT:.metadata.labels.lockstep\.dev/attempt,NODE:.spec.nodeName,PHASE:.status.phase,IP:.status.podIP' | sed 's/^/    /'
  show_gang_wait
  wait_for 180 "training to resume" job_log_has '^RESUMED'
  echo "  trainer log of $JOB-worker-0 (attempt 1): $(trainer_log "$JOB-worker-0" | grep '^RESUMED' | head -1)"
  echo "    (epoch counts from 0, so the epochs in the checkpoint are not trained again; the script's"
  echo "    attempt= is TORCHELASTIC_RESTART_COUNT, the launcher's in-place restarts in this pod)"
}

# The gang scheduler places all of a job's pods or none: big-gang needs 4 nodes with 2 free GPUs,
# 3 agent nodes are alive, so none of its pods is bound (a pod-by-pod scheduler would bind 3 and
# leave them idle, holding GPUs). Short: it is deleted at once.
show_gang_wait() {
  kubectl patch --local -f "$EXAMPLE" --type json -o yaml -p '[
    {"op": "replace", "path": "/metadata/name", "value": "big-gang"},
    {"op": "replace", "path": "/spec/replicas", "value": 4},
    {"op": "add", "path": "/spec/template/spec/containers/0/resources/limits",
     "value": {"nvidia.com/gpu": 2}}]' | kubectl apply -f - >/dev/null
  local msg=""
  # The controller's placeholder (reason WaitingForScheduler) until the scheduler says why.
  gang_verdict() {
    local reason
    reason="$(kubectl get tj big-gang -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].reason}' 2>/dev/null)"
    msg="$(kubectl get tj big-gang -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].message}' 2>/dev/null)"
    [[ -n "$reason" && "$reason" != WaitingForScheduler ]]
  }
  wait_for 30 "the gang scheduler's verdict on big-gang" gang_verdict
  echo "  meanwhile big-gang (4 pods x 2 GPUs) waits: $msg"
  echo "    its pods bound to a node: $(kubectl get pods -l lockstep.dev/job-name=big-gang \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true) of 4"
  kubectl delete tj big-gang --wait=false >/dev/null
}

finish() {
  step "6/6 $JOB finishes"
  wait_for 300 "$JOB to succeed" job_is Succeeded
  sleep 1  # the watch prints the last line
  stop_watch
  echo "  \$ kubectl get tj $JOB    (RESTARTS counts every restart: the node loss made one)"
  kubectl get tj "$JOB" | sed 's/^/    /'
  echo "  every rank ends with the same weights (kubectl logs $JOB-worker-N | grep WEIGHTS):"
  local pod
  for pod in "$JOB-worker-0" "$JOB-worker-1"; do trainer_log "$pod" | grep '^WEIGHTS' | sed 's/^/    /'; done
  point_metrics_at_leader
  echo "  operator metrics from the leader's pod (curl -s http://$DEMO_METRICS_ADDR/metrics):"
  local wanted='^lockstep_(node_failures_detected_total|restarts_total|recovery_duration_seconds_(sum|count)|detection_delay_seconds_(sum|count)|job_outcomes_total)'
  metrics_shown() {
    curl -fsS --max-time 5 "http://$DEMO_METRICS_ADDR/metrics" 2>/dev/null | grep -E "$wanted" |
      sed 's/^/    /' | grep .
  }
  local _; for _ in 1 2 3; do metrics_shown && break; sleep 1; done
}

where_to_look() {
  cat <<EOF

Demo done in $((SECONDS - DEMO_STARTED)) s (node failure to Running again: ${RECOVERY_S} s). The cluster '$CLUSTER_NAME' stays up:
  eval "\$(hack/cluster.sh env --name $CLUSTER_NAME)"
  kubectl get tj; kubectl describe tj $JOB        # state, attempt, lastRestart, events
  kubectl get events --field-selector involvedObject.name=$JOB
  kubectl get pods -o wide -L lockstep.dev/attempt; kubectl get nodes
  kubectl logs $JOB-worker-0              # the trainer's log (also -f, --tail N, -c init)
  kubectl -n $DEMO_NAMESPACE get pods -o wide; kubectl -n $DEMO_NAMESPACE logs $(leader_pod)   # the operator pods
  agent log: $STATE/logs/agent.log
  metrics: curl -s http://$DEMO_METRICS_ADDR/metrics | grep ^lockstep_
  kill another node: $BUILD/bin/lockstep-test-node-agent --fail-node agent-node-N --state-dir $AGENT_STATE_DIR
  stop everything (operator, agent, control plane): hack/cluster.sh down --name $CLUSTER_NAME
EOF
}

build
start_cluster
install_lockstep
submit_job
kill_node_and_recover
finish
end_step
where_to_look
