# Shared by the shell e2e tests (tests/e2e/images, tests/e2e/release, tests/kubelet): how a test
# says ok, skips, fails and waits, the tools and binaries it needs, the chart's operator pods and
# their Lease, the test node agent's start, and the two-pod Generic job they all run.
#
# Source it after `set -euo pipefail` with REPO and BUILD set. A test that has more to show when
# it fails defines `fail_context` (called by `fail`, output to stderr, its errors ignored).
# Functions that read the cluster take the namespace from $NS unless a parameter names one.

STARTED=$SECONDS

skip() { echo "LOCKSTEP_TEST_SKIPPED: $*"; exit 0; }
ok() { echo "ok: $* ($((SECONDS - STARTED)) s)"; }
fail() {
  echo "FAIL: $*" >&2
  if declare -F fail_context >/dev/null; then fail_context >&2 || true; fi
  exit 1
}

# wait_for SECONDS WHAT COMMAND...: polls COMMAND (its output discarded) every 0.5 s; fails
# naming WHAT once SECONDS have passed.
wait_for() {
  local limit="$1" what="$2"; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || fail "gave up after ${limit} s waiting for $what"
    sleep 0.5
  done
}

# require_tools TOOL...: skips the test, naming the first one missing.
require_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || skip "$tool not installed (hack/setup.sh)"
  done
}

# require_binaries NAME...: fails unless each is built in $BUILD/bin.
require_binaries() {
  local bin
  for bin in "$@"; do
    [[ -x "$BUILD/bin/$bin" ]] || fail "$BUILD/bin/$bin is not built"
  done
}

# chart_version: the chart's appVersion, the tag hack/build-images.sh gives the images.
chart_version() {
  sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$REPO/helm/lockstep/Chart.yaml"
}

# pod_field POD JSONPATH: one field of a pod in $NS, "" when absent.
pod_field() { kubectl get pod "$1" -n "$NS" -o jsonpath="{$2}" 2>/dev/null || true; }

# operator_pods: the chart release $RELEASE's Running operator pods in $NS, one per line.
operator_pods() {
  kubectl get pods -n "$NS" -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=operator" \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' 2>/dev/null || true
}
two_operators_running() { [[ "$(operator_pods | grep -c .)" == 2 ]]; }

# leader_pod [NAMESPACE]: the pod that holds the release's Lease (its identity is POD_UID).
leader_pod() {
  local id
  id="$(kubectl get lease "$RELEASE-lockstep" -n "${1:-$NS}" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)"
  echo "${id%%_*}"
}

# master_status POD: the pod's leader_election_master_status (1 leads, 0 stands by). The whole
# answer is read before it is parsed: a reader that stops early would kill curl with SIGPIPE.
master_status() {
  local metrics
  metrics="$(curl -fsS --max-time 3 "http://$(pod_field "$1" .status.podIP):8080/metrics" 2>/dev/null)" || return 0
  sed -n 's/^leader_election_master_status{.*} \([0-9]\).*/\1/p' <<<"$metrics"
}
leads() { local leader; leader="$(leader_pod)"; [[ -n "$leader" && "$(master_status "$leader")" == 1 ]]; }

# job_state NAME [NAMESPACE]: a TrainingJob's status.state, "" before it has one.
job_state() { kubectl get tj "$1" -n "${2:-$NS}" -o jsonpath='{.status.state}' 2>/dev/null || true; }
job_is() { [[ "$(job_state "$1")" == "$2" ]]; }

# apply_generic_job NAME SHELL_COMMAND: a Generic TrainingJob of 2 pods in $NS on the agent's
# nodes (block $BLOCK), each running SHELL_COMMAND in lockstep/examples:dev.
apply_generic_job() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: lockstep.dev/v1alpha1
kind: TrainingJob
metadata: {name: $1, namespace: $NS}
spec:
  framework: Generic
  replicas: 2
  procsPerPod: 1
  template:
    spec:
      nodeSelector: {topology.lockstep.dev/block: $BLOCK}
      terminationGracePeriodSeconds: 5
      containers:
      - name: trainer
        image: lockstep/examples:dev
        command: [sh, -c, '$2']
        resources: {requests: {cpu: 100m, memory: 64Mi}}
EOF
}

# start_test_agent RACK ARGS...: the test node agent for nodes ${NODES[@]} (2 GPUs each, block
# $BLOCK, bridge $BRIDGE, subnet $SUBNET, state in $STATE), its pods reaching the apiserver
# through the kubernetes Service and scheduled in $NS; ARGS add image layouts and maps. Sets
# AGENT_PID, logs to $WORK/agent.log, returns once the agent says "ready".
start_test_agent() {
  local rack="$1"; shift
  # Emptied here, not only by the redirect below: that one runs in the background child, so the
  # wait for "ready" could read the previous agent's log (CI once checked a restart before the
  # new agent had removed the old containers).
  : >"$WORK/agent.log"
  setsid "$BUILD/bin/lockstep-test-node-agent" --node-name "${NODES[0]}" --node-name "${NODES[1]}" \
    --gpus 2 --block "$BLOCK" --rack "$rack" --state-dir "$STATE" --bridge "$BRIDGE" \
    --subnet "$SUBNET" --heartbeat-ms 500 --lease-duration-s 5 --apiserver-proxy=true \
    --schedule-namespace "$NS" "$@" >"$WORK/agent.log" 2>&1 </dev/null &
  AGENT_PID=$!
  local deadline=$((SECONDS + 60))
  until grep -qx ready "$WORK/agent.log"; do
    kill -0 "$AGENT_PID" 2>/dev/null && (( SECONDS < deadline )) || fail "the agent did not start"
    sleep 0.2
  done
}

# agent_fail_context: for a failure on agent nodes, the pods of $NS and the agent's last 30
# lines but heartbeats.
agent_fail_context() {
  kubectl get pods -n "$NS" -o wide 2>/dev/null
  [[ -f "${WORK:-}/agent.log" ]] && grep -v heartbeat "$WORK/agent.log" | tail -30
}
