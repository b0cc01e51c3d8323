#!/usr/bin/env bash
# Lockstep from its own images, end to end (docs/e2e.md, "Images"):
#   1. hack/build-images.sh twice gives the same digests and byte-identical docker-archives;
#      `skopeo inspect` shows the non-root user and the entrypoints;
#   2. a test node agent with both layouts in its image store runs pods from them with runc:
#      readOnlyRootFilesystem really makes / unwritable (and the same pod without it can
#      write), and runAsUser/runAsGroup, supplementalGroups, capabilities and
#      allowPrivilegeEscalation=false reach the process (busybox `cp /proc/self/status` in the
#      launcher image reports its own credentials); a missing executable is a StartError;
#   3. `helm install` with the chart's defaults (2 replicas; the CRD left to the cluster and the
#      RBAC scoped to the test's namespace, so other tests' jobs are not its business): both
#      operator pods run from the operator image on agent nodes with their projected
#      ServiceAccount token, reach the apiserver through the kubernetes Service, one leads;
#   4. a TrainingJob's init containers copy the launcher from the launcher image and the job
#      succeeds;
#   5. deleting the leader's pod hands the Lease to another pod, and the ReplicaSet's
#      replacement runs again from the image;
#   6. an agent SIGKILLed with the operator pods running: the next agent on the same state dir
#      deletes the dead one's runc containers and cgroups, keeps the unpacked images, and the
#      ReplicaSet's new pods run and lead again.
# The agent's cleanup guarantees are checked when it stops (no netns, link, mount, runc
# container or cgroup of its bridge left).
#
#   tests/e2e/images/images_e2e_test.sh BUILD_DIR
# Needs root and $KUBECONFIG of a running local cluster; prints LOCKSTEP_TEST_SKIPPED otherwise.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
BUILD="$(realpath -m "${1:-$REPO/build}")"
# shellcheck source=tests/lib/e2e.sh
source "$REPO/tests/lib/e2e.sh"
fail_context() { agent_fail_context; }

[[ -n "${KUBECONFIG:-}" ]] || skip "KUBECONFIG unset (hack/cluster.sh up)"
(( EUID == 0 )) || skip "the test node agent needs root"
require_tools kubectl helm jq umoci skopeo runc iptables curl
require_binaries lockstep-operator lockstep-launcher lockstep-test-node-agent

ID="$(head -c 16 /dev/urandom | md5sum | cut -c1-5)"
NS="images-e2e-$ID" RELEASE="img$ID" BRIDGE="lsi$ID" BLOCK="block-images-$ID"
SUBNET="10.213.$(( RANDOM % 250 + 1 )).0/24"
NODES=("images-$ID-0" "images-$ID-1")
WORK="$(mktemp -d)"
STATE="$WORK/agent"
VERSION="$(chart_version)"
AGENT_PID=""

# ---- 1. images ----------------------------------------------------------------------------

build_images_twice() {
  local out
  for out in images-a images-b; do
    "$REPO/hack/build-images.sh" --build-dir "$BUILD" --no-build --out "$WORK/$out" \
      2>"$WORK/$out.log" || { cat "$WORK/$out.log" >&2; fail "hack/build-images.sh failed"; }
    sleep 1  # a timestamp taken from the clock would now differ
  done
  diff "$WORK/images-a/digests" "$WORK/images-b/digests" >&2 ||
    fail "two builds of the same tree gave different digests"
  local image
  for image in operator launcher; do
    cmp -s "$WORK/images-a/$image.tar" "$WORK/images-b/$image.tar" ||
      fail "two builds gave different $image docker-archives"
  done
  ok "hack/build-images.sh twice: same digests ($(tr '\n' ' ' <"$WORK/images-a/digests"))"
}

inspect_images() {
  local config
  config="$(skopeo inspect --config "oci:$WORK/images-a/operator")"
  [[ "$(jq -r .config.User <<<"$config")" == 65532:65532 ]] || fail "operator user: $config"
  [[ "$(jq -c .config.Entrypoint <<<"$config")" == '["/lockstep-operator"]' ]] ||
    fail "operator entrypoint: $config"
  config="$(skopeo inspect --config "oci:$WORK/images-a/launcher")"
  [[ "$(jq -r .config.User <<<"$config")" == 65532:65532 ]] || fail "launcher user: $config"
  [[ "$(jq -c .config.Entrypoint <<<"$config")" == '["/bin/cp"]' ]] ||
    fail "launcher entrypoint: $config"
  # What `docker load` reads for the image's name.
  tar -xOf "$WORK/images-a/operator.tar" manifest.json |
    jq -e --arg t "docker.io/lockstep/operator:$VERSION" '.[0].RepoTags | index($t)' >/dev/null ||
    fail "the operator docker-archive is not tagged lockstep/operator:$VERSION"
  ok "skopeo inspect: user 65532:65532, entrypoints /lockstep-operator and /bin/cp"
}

# ---- the agent ----------------------------------------------------------------------------

start_agent() {
  start_test_agent rack-images \
    --image-layout "$WORK/images-a/operator" --image-layout "$WORK/images-a/launcher" \
    --image-map "lockstep/examples=$REPO"
  ok "agent up: nodes ${NODES[*]}, image store of both layouts, kubernetes Service routed"
}

# Stops the agent and checks that nothing of it is left (docs/e2e.md, "Cleanup guarantees",
# plus runc's containers and cgroups).
stop_agent_and_check() {
  [[ -n "$AGENT_PID" ]] || return 0
  kill -TERM "$AGENT_PID" 2>/dev/null || true
  local deadline=$((SECONDS + 60))
  while kill -0 "$AGENT_PID" 2>/dev/null; do
    (( SECONDS < deadline )) || { kill -KILL "$AGENT_PID"; echo "FAIL: agent did not exit" >&2; return 1; }
    sleep 0.2
  done
  AGENT_PID=""
  local left=()
  ip netns list | grep -q "^$BRIDGE-" && left+=("netns")
  ip -o link show | grep -q "$BRIDGE" && left+=("links")
  grep -qE "$BRIDGE|$STATE" /proc/mounts && left+=("mounts")
  [[ -e "$STATE" ]] && left+=("state dir")
  compgen -G "/sys/fs/cgroup/*/$BRIDGE-*" >/dev/null && left+=("cgroups")
  local node
  for node in "${NODES[@]}"; do kubectl get node "$node" >/dev/null 2>&1 && left+=("node $node"); done
  (( ${#left[@]} == 0 )) || { echo "FAIL: the agent left: ${left[*]}" >&2; return 1; }
  echo "ok: agent stopped, nothing of it left (netns, links, mounts, runc state, cgroups, nodes)"
}

cleanup() {
  local rc=$?
  helm uninstall "$RELEASE" -n "$NS" >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  stop_agent_and_check || rc=1
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT

pod_done() { local p; p="$(pod_field "$1" .status.phase)"; [[ "$p" == Succeeded || "$p" == Failed ]]; }
pod_file() { cat "$STATE/pods/$(pod_field "$1" .metadata.uid)/$2" 2>/dev/null || true; }

# ---- 2. securityContext through the agent --------------------------------------------------

# A pod of the launcher image whose busybox `cp` writes its own /proc/self/status to DEST;
# no nodeName: the agent binds it as the default scheduler.
status_pod() {
  local name="$1" dest="$2" pod_sc="$3" sc="$4"
  cat <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$name", "namespace": "$NS"},
 "spec": {"restartPolicy": "Never", "securityContext": $pod_sc,
  "volumes": [{"name": "scratch", "emptyDir": {}}],
  "containers": [{"name": "main", "image": "lockstep/launcher:$VERSION",
    "command": ["cp", "/proc/self/status", "$dest"], "securityContext": $sc,
    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}]}}
EOF
}

# status_field POD FIELD: a field of the process status the pod's cp wrote to /scratch/status,
# its values separated by single spaces.
status_field() {
  pod_file "$1" volumes/scratch/status | awk -v f="$2:" '$1 == f {$1 = ""; print substr($0, 2)}'
}

check_security_context() {
  kubectl create namespace "$NS" >/dev/null
  {
    status_pod ro-root /written '{"runAsUser": 0}' '{"readOnlyRootFilesystem": true}'
    status_pod rw-root /written '{"runAsUser": 0}' '{"readOnlyRootFilesystem": false}'
    status_pod confined /scratch/status '{"runAsUser": 1234, "runAsGroup": 5678, "supplementalGroups": [42]}' \
      '{"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}'
    status_pod image-user /scratch/status '{}' '{}'
    # runc's own failure (no such executable in the image) is a StartError, as with a runtime.
    status_pod no-such-command /x '{}' '{}' | jq '.spec.containers[0].command = ["/no/such"]'
  } | kubectl apply -f - >/dev/null
  local pod
  for pod in ro-root rw-root confined image-user no-such-command; do
    wait_for 60 "pod $pod to finish" pod_done "$pod"
  done
  local start_error
  start_error="$(pod_field no-such-command '.status.containerStatuses[0].state.terminated')"
  [[ "$(jq -r '"\(.reason) \(.exitCode)"' <<<"$start_error")" == "StartError 127" ]] ||
    fail "a missing executable is not StartError 127: $start_error"
  for pod in ro-root rw-root confined image-user; do
    [[ "$(pod_field "$pod" '.status.containerStatuses[0].containerID')" == runc://* ]] ||
      fail "$pod did not run with runc"
    [[ " ${NODES[*]} " == *" $(pod_field "$pod" .spec.nodeName) "* ]] || fail "$pod not on an agent node"
  done
  [[ "$(pod_field ro-root .status.phase)" == Failed ]] || fail "ro-root wrote its read-only root"
  pod_file ro-root containers/main.log | grep -q "Read-only file system" ||
    fail "ro-root failed for another reason: $(pod_file ro-root containers/main.log)"
  [[ "$(pod_field rw-root .status.phase)" == Succeeded ]] ||
    fail "rw-root could not write its writable root: $(pod_file rw-root containers/main.log)"
  ok "readOnlyRootFilesystem: / unwritable ($(pod_file ro-root containers/main.log)); writable without it"

  [[ "$(pod_field confined .status.phase)" == Succeeded ]] || fail "confined: $(pod_file confined containers/main.log)"
  [[ "$(status_field confined Uid)" == "1234 1234 1234 1234" ]] || fail "confined Uid: $(status_field confined Uid)"
  [[ "$(status_field confined Gid)" == "5678 5678 5678 5678" ]] || fail "confined Gid: $(status_field confined Gid)"
  [[ " $(status_field confined Groups) " == *" 42 "* ]] || fail "confined Groups: $(status_field confined Groups)"
  # Bit 10 is CAP_NET_BIND_SERVICE: the bounding set holds it alone.
  [[ "$(status_field confined CapBnd)" == 0000000000000400 ]] || fail "confined CapBnd: $(status_field confined CapBnd)"
  [[ "$(status_field confined NoNewPrivs)" == 1 ]] || fail "confined NoNewPrivs: $(status_field confined NoNewPrivs)"
  [[ "$(status_field image-user Uid)" == "65532 65532 65532 65532" ]] ||
    fail "image-user Uid (the image's USER): $(status_field image-user Uid)"
  [[ "$(status_field image-user NoNewPrivs)" == 0 ]] || fail "image-user NoNewPrivs"
  ok "securityContext applied: uid 1234, gid 5678, groups with 42, CapBnd NET_BIND_SERVICE only, NoNewPrivs; image USER 65532 by default"
  kubectl delete pod -n "$NS" ro-root rw-root confined image-user no-such-command --wait=false \
    >/dev/null
}

# ---- 3. the chart's Deployment from the operator image -------------------------------------

# one_leads: the Lease holder says it leads and every other operator pod says it stands by.
one_leads() {
  local leader; leader="$(leader_pod)"
  [[ -n "$leader" && "$(master_status "$leader")" == 1 ]] || return 1
  local pod
  for pod in $(operator_pods); do
    [[ "$pod" == "$leader" || "$(master_status "$pod")" == 0 ]] || return 1
  done
}

install_chart() {
  helm install "$RELEASE" "$REPO/helm/lockstep" -n "$NS" --set crds.install=false \
    --set rbac.scope=namespace >"$WORK/helm.log" 2>&1 || { cat "$WORK/helm.log" >&2; fail "helm install"; }
  wait_for 120 "two operator pods Running" two_operators_running
  local digest pod
  digest="$(awk -v r="lockstep/operator:$VERSION" '$1 == r {print $2}' "$WORK/images-a/digests")"
  for pod in $(operator_pods); do
    [[ " ${NODES[*]} " == *" $(pod_field "$pod" .spec.nodeName) "* ]] || fail "$pod is not on an agent node"
    [[ "$(pod_field "$pod" '.status.containerStatuses[0].containerID')" == runc://* ]] ||
      fail "$pod does not run with runc"
    [[ "$(pod_field "$pod" '.status.containerStatuses[0].imageID')" == "lockstep/operator@$digest" ]] ||
      fail "$pod runs $(pod_field "$pod" '.status.containerStatuses[0].imageID'), not the built image"
    # The ServiceAccount admission's projected token, written by the agent from TokenRequest.
    pod_field "$pod" '.spec.volumes[*].projected.sources[*].serviceAccountToken.path' | grep -qw token ||
      fail "$pod has no projected ServiceAccount token"
    compgen -G "$STATE/pods/$(pod_field "$pod" .metadata.uid)/volumes/kube-api-access-*/token" >/dev/null ||
      fail "$pod's token was not projected"
  done
  wait_for 60 "one operator to lead and the other to stand by" one_leads
  ok "helm install: $(operator_pods | tr '\n' ' ')Running from lockstep/operator@${digest:0:19}... on agent nodes; $(leader_pod) leads"
}

# ---- 4. a TrainingJob's launcher from the launcher image ------------------------------------

run_training_job() {
  apply_generic_job hello 'echo IMAGES_E2E_TRAINED world=$LOCKSTEP_REPLICAS'
  wait_for 120 "the TrainingJob to succeed (state: $(job_state hello))" job_is hello Succeeded
  local digest pod
  digest="$(awk -v r="lockstep/launcher:$VERSION" '$1 == r {print $2}' "$WORK/images-a/digests")"
  for pod in hello-worker-0 hello-worker-1; do
    [[ "$(pod_field "$pod" '.status.initContainerStatuses[0].containerID')" == runc://* ]] ||
      fail "$pod's init container did not run with runc"
    [[ "$(pod_field "$pod" '.status.initContainerStatuses[0].imageID')" == "lockstep/launcher@$digest" ]] ||
      fail "$pod's init container ran $(pod_field "$pod" '.status.initContainerStatuses[0].imageID')"
    pod_file "$pod" containers/trainer.log | grep -q IMAGES_E2E_TRAINED || fail "$pod's trainer did not run"
  done
  ok "TrainingJob Succeeded; both init containers copied the launcher from lockstep/launcher@${digest:0:19}..."
}

# ---- 5. leader hand-over --------------------------------------------------------------------

hand_over() {
  local old; old="$(leader_pod)"
  local deleted=$SECONDS
  kubectl delete pod "$old" -n "$NS" --wait=false >/dev/null
  new_leader() { local l; l="$(leader_pod)"; [[ -n "$l" && "$l" != "$old" && "$(master_status "$l")" == 1 ]]; }
  wait_for 45 "another pod to take the Lease from $old" new_leader
  local took=$((SECONDS - deleted))
  replaced() { two_operators_running && ! operator_pods | grep -qx "$old"; }
  wait_for 90 "the ReplicaSet's replacement to run" replaced
  ok "deleted leader $old; $(leader_pod) leads ${took} s later; two operator pods Running again"
}

# ---- 6. a crashed agent's containers ----------------------------------------------------------

crash_and_restart() {
  local ids unpacked_before
  ids="$(runc --root "$STATE/runc" list -q)"
  [[ "$(grep -c . <<<"$ids")" -ge 2 ]] || fail "expected the operators' runc containers, got: $ids"
  unpacked_before="$(stat -c %i "$STATE"/images/sha256-*/rootfs | sort | tr '\n' ' ')"
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null || true
  AGENT_PID=""
  start_agent
  local id
  for id in $ids; do
    runc --root "$STATE/runc" state "$id" >/dev/null 2>&1 &&
      fail "runc container $id survived: $(runc --root "$STATE/runc" state "$id" 2>&1 | tr -s ' \n' ' ')"
    compgen -G "/sys/fs/cgroup/*/$id" >/dev/null && fail "cgroups of $id survived"
  done
  [[ "$(stat -c %i "$STATE"/images/sha256-*/rootfs | sort | tr '\n' ' ')" == "$unpacked_before" ]] ||
    fail "the restarted agent unpacked the images again"
  # The dead agent's pods are Failed now (NodeAgentRestarted); the ReplicaSet's new ones take
  # the Lease once the old holder's term runs out.
  operators_back() { two_operators_running && one_leads; }
  wait_for 120 "two new operator pods Running and one leading" operators_back
  ok "agent SIGKILLed and restarted: the dead agent's $(grep -c . <<<"$ids") runc containers and cgroups deleted, images kept, operators back ($(leader_pod) leads)"
}
build_images_twice
inspect_images
start_agent
check_security_context
install_chart
run_training_job
hand_over
crash_and_restart
echo "images e2e: all checks passed in $((SECONDS - STARTED)) s"
