#!/usr/bin/env bash
# The kubelet tier: Lockstep on real nodes (docs/e2e.md, "Real kubelet nodes"). A cluster of its
# own with 3 real kubelets (containerd and runc, the CNI bridge, kube-proxy, CoreDNS,
# kube-scheduler, kube-network-policies enforcing NetworkPolicy):
#   1. nodes: Ready, their runtime containerd, nvidia.com/gpu advertised;
#   2. images: the operator, launcher, lockstep/examples-jax (and -pytorch) images built by
#      hack/build-images.sh and loaded into every node's containerd;
#   3. helm install: both operator replicas Running from the operator image on kubelet nodes,
#      placed by kube-scheduler, one leads; `kubectl logs` through the kubelet;
#   4. a JAX TrainingJob in a namespace that enforces Pod Security `restricted`: its pods are
#      created placed by Lockstep, the init container copies the launcher from the launcher
#      image, worker-1's launcher reaches worker-0's rendezvous by its DNS name (the job's
#      headless Service, through CoreDNS) and the job Succeeds with every process agreeing on
#      the weights;
#   4b. a PyTorch DDP job from lockstep/examples-pytorch, started with it: 2 pods on 2 nodes,
#      Succeeded, both ranks with the same weights;
#   4c. a graceful suspend of a DDP job: the real kubelets' SIGTERM, the ranks agree on a step,
#      save it and exit 0 within the pod's grace, the job Suspended
#      (4b and 4c with LOCKSTEP_KUBELET_PYTORCH=1 only);
#   5. NetworkPolicy enforced by the kernel: while a job runs, a pod of that job opens worker-0's
#      rendezvous port; a pod in another namespace times out there and on a port the template
#      does not declare (dropped), while its connection to the port the template declares
#      reaches worker-0 and is refused (nothing listens);
#   6. a node's death (kubelet, containerd and every container killed, its link cut): the
#      operator sees its Lease expire, restarts the gang on the living nodes and the job
#      Succeeds with one restart.
# `hack/cluster.sh down` at the end fails the test if a node left anything behind.
#
#   tests/kubelet/kubelet_e2e_test.sh BUILD_DIR
# Needs root; prints LOCKSTEP_TEST_SKIPPED otherwise.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(realpath -m "${1:-$REPO/build}")"
# shellcheck source=tests/lib/e2e.sh
source "$REPO/tests/lib/e2e.sh"
fail_context() {
  kubectl get nodes -o wide 2>/dev/null
  kubectl get pods -A -o wide 2>/dev/null
  kubectl get tj -A -o wide 2>/dev/null
  kubectl get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -25
  local leader; leader="$(leader_pod "$OP_NS")"
  [[ -z "$leader" ]] || kubectl logs -n "$OP_NS" "$leader" --tail 30 2>/dev/null
}

(( EUID == 0 )) || skip "real kubelet nodes need root"
require_binaries lockstep-operator lockstep-launcher

source "$REPO/hack/lib/common.sh"
CLUSTER="${LOCKSTEP_TEST_CLUSTER:-lockstep-test}-kubelet"
WORK="$(mktemp -d)"
OP_NS=lockstep-system RELEASE=ks NS=kubelet-e2e OTHER_NS=kubelet-e2e-other
VERSION="$(chart_version)"

cleanup() {
  local rc=$?
  if ! "$REPO/hack/cluster.sh" down --name "$CLUSTER" >"$WORK/down.log" 2>&1; then
    cat "$WORK/down.log" >&2
    echo "FAIL: hack/cluster.sh down: the kubelet nodes left something behind" >&2
    rc=1
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT

# ---- 1. nodes ---------------------------------------------------------------------------------
"$REPO/hack/cluster.sh" down --name "$CLUSTER" >/dev/null 2>&1 || true
eval "$("$REPO/hack/cluster.sh" up --name "$CLUSTER" --nodes 0 --kubelet-nodes 3)"
nodes="$(kubectl get nodes -l lockstep.dev/kubelet-node=true \
  -o jsonpath='{range .items[*]}{.metadata.name} {.status.nodeInfo.containerRuntimeVersion} {.status.capacity.nvidia\.com/gpu}{"\n"}{end}')"
[[ "$(grep -c '^kubelet-node-[0-9] containerd://1\.[0-9.]*[^ ]* 2$' <<<"$nodes")" == 3 ]] ||
  fail "3 kubelet nodes with containerd and 2 GPUs each, got: $nodes"
ok "nodes: $(tr '\n' ';' <<<"$nodes")"

# ---- 2. images --------------------------------------------------------------------------------
images_started=$SECONDS
# LOCKSTEP_KUBELET_PYTORCH=1: lockstep/examples-pytorch (5.4 GB: docs/e2e.md, "PyTorch on the
# kubelet nodes") and steps 4b and 4c. Opt-in until they have passed 5 runs under load.
examples=(jax)
[[ "${LOCKSTEP_KUBELET_PYTORCH:-0}" == 0 ]] || examples+=(pytorch)
"$REPO/hack/build-images.sh" --build-dir "$BUILD" --no-build --out "$WORK/images" \
  $(printf -- '--examples %s ' "${examples[@]}") >"$WORK/images.log" 2>&1 ||
  { tail -20 "$WORK/images.log" >&2; fail "hack/build-images.sh"; }
built_in=$((SECONDS - images_started))
"$REPO/hack/cluster.sh" load-images --name "$CLUSTER" "$WORK"/images/*.tar \
  "${examples[@]/#/$WORK/images/examples-}" >"$WORK/load.log" 2>&1 ||
  { cat "$WORK/load.log" >&2; fail "hack/cluster.sh load-images"; }
ok "images: $(awk '{print $1}' "$WORK/images/digests" | tr '\n' ' ')built in $built_in s, in every node's containerd $((SECONDS - images_started - built_in)) s later"

# ---- 3. the operator from its image ---------------------------------------------------------
kubectl create namespace "$OP_NS" >/dev/null
helm install "$RELEASE" "$REPO/helm/lockstep" -n "$OP_NS" \
  --set "operator.extraArgs={--node-lease-grace=15s}" >"$WORK/helm.log" 2>&1 ||
  { cat "$WORK/helm.log" >&2; fail "helm install"; }
leader_running() {
  local pod; pod="$(leader_pod "$OP_NS")"
  [[ -n "$pod" ]] || return 1
  [[ "$(kubectl get pod -n "$OP_NS" "$pod" -o jsonpath='{.status.phase}')" == Running ]]
}
wait_for 120 "both operator pods Available" kubectl rollout status deployment -n "$OP_NS" \
  --timeout 2s "$RELEASE-lockstep"
wait_for 60 "an operator pod leads" leader_running
op_nodes="$(kubectl get pods -n "$OP_NS" -l app.kubernetes.io/component=operator \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{" "}{end}')"
grep -qE '^(kubelet-node-[0-9] ){2}$' <<<"$op_nodes" || fail "operator pods on kubelet nodes: $op_nodes"
# Read whole, then tested: `kubectl logs | grep -q .` under pipefail failed when grep's early exit
# cut kubectl off with SIGPIPE (CI 2026-12-07: no error, exit 141).
leader_log="$(kubectl logs -n "$OP_NS" "$(leader_pod "$OP_NS")" --tail 200)" || fail "kubectl logs of the leader"
[[ -n "$leader_log" ]] || fail "kubectl logs of the leader: empty"
ok "operator: $(leader_pod "$OP_NS") leads, pods on $op_nodes(kube-scheduler placed them); kubectl logs works"

# ---- 4. a JAX job under Pod Security restricted ----------------------------------------------
kubectl create namespace "$NS" >/dev/null
kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted >/dev/null
# jax_job NAME STEPS: the JAX example on the kubelet nodes, 2 pods, as a restricted namespace
# admits it.
jax_job() {
  cat <<EOF
apiVersion: lockstep.dev/v1alpha1
kind: TrainingJob
metadata: {name: $1, namespace: $NS}
spec:
  framework: JAX
  replicas: 2
  procsPerPod: 1
  template:
    spec:
      nodeSelector: {lockstep.dev/kubelet-node: "true"}
      terminationGracePeriodSeconds: 5
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: trainer
        image: lockstep/examples-jax:$VERSION
        imagePullPolicy: Never
        command: [python3, /examples/frameworks/jax/train.py]
        args: [--steps, "$2", --step-seconds, "0.1"]
        ports: [{name: metrics, containerPort: 8080}]  # declared: the policy opens it to anyone
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
        resources:
          requests: {cpu: 100m, memory: 256Mi}
  failurePolicy:
    maxRestarts: 2
    backoff: {initialSeconds: 1, maxSeconds: 2}
EOF
}
# ddp_job NAME: the DDP example (gloo on the CPU), 2 pods of 1 process on 2 different nodes.
ddp_job() {
  cat <<EOF
apiVersion: lockstep.dev/v1alpha1
kind: TrainingJob
metadata: {name: $1, namespace: $NS}
spec:
  framework: PyTorch
  replicas: 2
  procsPerPod: 1
  template:
    spec:
      nodeSelector: {lockstep.dev/kubelet-node: "true"}
      terminationGracePeriodSeconds: 5
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile: {type: RuntimeDefault}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {lockstep.dev/job-name: $1}}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: trainer
        image: lockstep/examples-pytorch:$VERSION
        imagePullPolicy: Never
        command: [python3, /examples/frameworks/pytorch/train.py]
        args: [--epochs, "3", --steps-per-epoch, "5", --batch-size, "16"]
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
        resources:
          requests: {cpu: 100m, memory: 512Mi}
  failurePolicy:
    maxRestarts: 2
    backoff: {initialSeconds: 1, maxSeconds: 2}
EOF
}
# ddp_stop_job: ddp-stop (step 4c), the DDP example slowed down (0.2 s a step, 1,000 steps) with a
# 30-s grace and a checkpoint directory, applied.
ddp_stop_job() {
  ddp_job ddp-stop | python3 -c '
import json, sys, yaml
job = yaml.safe_load(sys.stdin)
spec = job["spec"]["template"]["spec"]
spec["terminationGracePeriodSeconds"] = 30
c = spec["containers"][0]
c["args"] = ["--epochs", "100", "--steps-per-epoch", "10", "--sleep-per-step", "0.2",
             "--checkpoint-dir", "/ckpt"]
c["env"] = [{"name": "TRAIN_STUCK_STOP_TIMEOUT", "value": "20"}]
c["volumeMounts"] = [{"name": "ckpt", "mountPath": "/ckpt"}]
spec["volumes"] = [{"name": "ckpt", "emptyDir": {}}]
print(json.dumps(job))' | kubectl apply -f - >"$WORK/apply.log" 2>&1 ||
    { cat "$WORK/apply.log" >&2; fail "apply ddp-stop"; }
}
if [[ "${LOCKSTEP_KUBELET_PYTORCH:-0}" != 0 ]]; then
  ddp_started=$SECONDS
  ddp_job ddp-1 | kubectl apply -f - >"$WORK/apply.log" 2>&1 || { cat "$WORK/apply.log" >&2; fail "apply ddp-1"; }
  ddp_stop_job  # started now too: its pods import torch while the others run
fi
jax_job jax-1 5 | kubectl apply -f - >"$WORK/apply.log" 2>&1 || { cat "$WORK/apply.log" >&2; fail "apply jax-1"; }
wait_for 240 "jax-1 Succeeded" job_is jax-1 Succeeded
logs="$(kubectl logs -n "$NS" -l lockstep.dev/job-name=jax-1 -c trainer --tail 50)"
shas="$(grep -o 'JAX process=[0-9] count=2 .* sha=[0-9a-f]*' <<<"$logs" | sed 's/.*sha=//' | sort -u)"
[[ "$(grep -c 'JAX process=' <<<"$logs")" == 2 && "$(wc -l <<<"$shas")" == 1 ]] ||
  fail "jax-1: two processes with one sha, got: $logs"
ok "jax-1 Succeeded on real kubelets under Pod Security restricted; both processes sha=$shas"

# ---- 4b. PyTorch DDP from lockstep/examples-pytorch ---------------------------------------
# Applied with jax-1 above, so the jobs' start-up overlaps.
if [[ -n "${ddp_started:-}" ]]; then
  wait_for 300 "ddp-1 Succeeded" job_is ddp-1 Succeeded
  ddp_in=$((SECONDS - ddp_started))
  ddp_nodes="$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=ddp-1 \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c '^kubelet-node-')"
  [[ "$ddp_nodes" == 2 ]] || fail "ddp-1's 2 pods on 2 kubelet nodes, got $ddp_nodes nodes"
  logs="$(kubectl logs -n "$NS" -l lockstep.dev/job-name=ddp-1 -c trainer --tail 50)"
  weights="$(grep -o 'WEIGHTS rank=[0-9]* world=2 sha=[0-9a-f]*' <<<"$logs" | sort -u)"
  [[ "$(awk '{print $2}' <<<"$weights" | tr '\n' ' ')" == "rank=0 rank=1 " &&
     "$(awk '{print $4}' <<<"$weights" | sort -u | wc -l)" == 1 ]] ||
    fail "ddp-1: ranks 0 and 1 of 2 with one sha, got: $logs"
  ok "ddp-1 (PyTorch DDP, gloo) Succeeded on 2 kubelet nodes in $ddp_in s; both ranks $(awk 'NR == 1 {print $4}' <<<"$weights")"
fi

# ---- 4c. a graceful suspend: SIGTERM from the real kubelet, within the pod's grace -------------
# ddp-stop (applied in step 4) trains slowly; once rank 0 reported a step, runPolicy.suspend: the
# operator deletes the pods, each node's kubelet sends its trainer container SIGTERM, the
# launchers pass it on with the pod's grace (29 s), the ranks agree on a step and save it, rank 0
# exits 0, and each launcher exits 143 with the termination reason `terminated` (a launcher
# stopped by a signal, docs/launcher.md; a kill at the grace's end would be 137, no message); the
# job is Suspended. Logs and last statuses are followed while the pods exist (the kubelet removes
# them with the pods). Seen here: both pods get SIGTERM at once, worker-0's launcher exits as soon
# as rank 0 is done and takes the rendezvous server with it, and worker-1's launcher then fences
# its rank, which has printed STOPPED and is exiting (so only rank 0's exit code is asserted).
if [[ -n "${ddp_started:-}" ]]; then
  stepped() { [[ "$(kubectl get tj ddp-stop -n "$NS" -o jsonpath='{.status.progress.step}')" -ge 1 ]]; }
  wait_for 240 "ddp-stop training (status.progress.step >= 1)" stepped
  followers=()
  for pod in $(kubectl get pods -n "$NS" -l lockstep.dev/job-name=ddp-stop -o name); do
    kubectl logs -n "$NS" -f "$pod" -c trainer >"$WORK/${pod#pod/}.log" 2>&1 &
    followers+=($!)
  done
  (( ${#followers[@]} == 2 )) || fail "ddp-stop: want 2 pods, got ${#followers[@]}"
  kubectl get pods -n "$NS" -l lockstep.dev/job-name=ddp-stop -w --output-watch-events -o json \
    >"$WORK/ddp-stop.watch" 2>"$WORK/ddp-stop.watch.err" &
  watcher=$!
  suspend_at=$SECONDS
  kubectl patch tj ddp-stop -n "$NS" --type merge -p '{"spec":{"runPolicy":{"suspend":true}}}' >/dev/null
  wait_for 120 "ddp-stop Suspended" job_is ddp-stop Suspended
  no_pods() { [[ -z "$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=ddp-stop -o name)" ]]; }
  wait_for 120 "ddp-stop's pods gone" no_pods
  stopped_in=$((SECONDS - suspend_at))
  for pid in "${followers[@]}"; do wait "$pid" || true; done  # they end with their containers
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  stops="$(cat "$WORK"/ddp-stop-*.log | grep -o 'STOPPED step=[0-9]* rank=[0-9]*' | sort -u)" || true
  [[ "$(grep -c . <<<"$stops")" == 2 && "$(awk '{print $2}' <<<"$stops" | sort -u | wc -l)" == 1 ]] ||
    fail "ddp-stop: both ranks STOPPED at one step, got: $(cat "$WORK"/ddp-stop-*.log | tail -20)"
  # The last terminated state of each pod's trainer in the watch: "<pod>=<exit code>/<reason in
  # the launcher's termination message>/<its signal>".
  exits="$(python3 - "$WORK/ddp-stop.watch" <<'PY'
import json, sys
text, decoder, at, last = open(sys.argv[1]).read(), json.JSONDecoder(), 0, {}
while text[at:].strip():
    at += len(text[at:]) - len(text[at:].lstrip())
    event, at = decoder.raw_decode(text, at)
    pod = event["object"]
    for c in pod.get("status", {}).get("containerStatuses", []):
        done = c.get("state", {}).get("terminated")
        if c["name"] == "trainer" and done:
            try:
                message = json.loads(done.get("message") or "{}")
            except ValueError:
                message = {}
            last[pod["metadata"]["name"]] = \
                f"{done['exitCode']}/{message.get('reason', '')}/{message.get('signal', '')}"
print(" ".join(f"{pod}={state}" for pod, state in sorted(last.items())))
PY
  )" || fail "ddp-stop: reading the pods' watch: $(tail -c 2000 "$WORK/ddp-stop.watch")"
  [[ "$exits" == "ddp-stop-worker-0=143/terminated/15 ddp-stop-worker-1=143/terminated/15" ]] ||
    fail "ddp-stop: both launchers should exit 143, reason terminated, signal 15; saw: '$exits'"
  grep -q 'signal received; stopping children signal=15 grace_ms=29000' "$WORK/ddp-stop-worker-0.log" &&
    grep -q 'signal received; stopping children signal=15 grace_ms=29000' "$WORK/ddp-stop-worker-1.log" ||
    fail "ddp-stop: each launcher should get SIGTERM with the pod's grace: $(tail -n 5 "$WORK"/ddp-stop-worker-*.log)"
  grep -q 'child exited rank=0 exit_code=0 ' "$WORK/ddp-stop-worker-0.log" ||
    fail "ddp-stop: rank 0 should exit 0 after its checkpoint: $(tail -n 5 "$WORK/ddp-stop-worker-0.log")"
  ok "ddp-stop suspended gracefully: both ranks $(awk 'NR == 1 {print $2}' <<<"$stops"), launchers got SIGTERM with a 29-s grace, rank 0 exited 0, the pods ${exits//ddp-stop-/} and gone ${stopped_in} s after the suspend"
fi

# ---- 5. NetworkPolicy enforced ---------------------------------------------------------------
jax_job jax-net 3000 | kubectl apply -f - >/dev/null
wait_for 120 "jax-net Running" job_is jax-net Running
worker0_ip="$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=jax-net,lockstep.dev/replica-index=0 \
  -o jsonpath='{.items[0].status.podIP}')"
[[ -n "$worker0_ip" ]] || fail "jax-net's worker-0 has no IP"
kubectl create namespace "$OTHER_NS" >/dev/null
# probe_pod NAME NAMESPACE LABELS PORT: a pod that tries to open IP:PORT for 3 s and prints
# "open" or "closed: <error>".
probe_pod() {
  cat <<EOF | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2, labels: {$3}}
spec:
  restartPolicy: Never
  nodeSelector: {lockstep.dev/kubelet-node: "true"}
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: probe
    image: lockstep/examples-jax:$VERSION
    imagePullPolicy: Never
    command: [python3, -c, "import socket,sys\ntry:\n  socket.create_connection(('$worker0_ip', $4), timeout=3); print('open')\nexcept OSError as e:\n  print('closed:', e)"]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
}
probe_result() {
  local phase; phase="$(kubectl get pod "$1" -n "$2" -o jsonpath='{.status.phase}')"
  [[ "$phase" == Succeeded || "$phase" == Failed ]] && kubectl logs "$1" -n "$2"
}
probe() {
  probe_pod "$@"
  wait_for 60 "probe $1 done" probe_result "$1" "$2"
  probe_result "$1" "$2"
}
same="$(probe same-job "$NS" "lockstep.dev/job-name: jax-net" 29400)"
[[ "$same" == open ]] || fail "a pod of the job could not open worker-0's rendezvous port: $same"
other="$(probe other-ns "$OTHER_NS" "app: probe" 29400)"
[[ "$other" == *"timed out"* ]] ||
  fail "a pod of another namespace reached worker-0's rendezvous port (want a drop): $other"
# Every port the template does not declare is the job's only (issue 44 item 5): 29399, where
# nothing listens, drops too instead of being refused.
undeclared="$(probe other-ns-undeclared "$OTHER_NS" "app: probe" 29399)"
[[ "$undeclared" == *"timed out"* ]] ||
  fail "a pod of another namespace reached worker-0's undeclared port 29399 (want a drop): $undeclared"
# The control: the same pod's packets reach worker-0 on the port the template declares (nothing
# listens there, so the pod's kernel refuses), so the timeouts above were the policy's drops.
declared="$(probe other-ns-declared "$OTHER_NS" "app: probe" 8080)"
[[ "$declared" == *"refused"* ]] ||
  fail "a pod of another namespace should reach worker-0 on the declared 8080 and be refused: $declared"
ok "NetworkPolicy enforced: same job -> $worker0_ip:29400 $same; other namespace -> 29400 $other, undeclared 29399 $undeclared, declared 8080 $declared"

# ---- 6. a node dies ---------------------------------------------------------------------------
victim="$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=jax-net,lockstep.dev/replica-index=1 \
  -o jsonpath='{.items[0].spec.nodeName}')"
[[ "$victim" == kubelet-node-* ]] || fail "jax-net's worker-1 is on '$victim'"
killed_at=$SECONDS
"$REPO/hack/cluster.sh" kill-node "$victim" --name "$CLUSTER" >/dev/null 2>&1
restarted() {
  [[ "$(kubectl get tj jax-net -n "$NS" -o jsonpath='{.status.restarts.total}')" -ge 1 ]] &&
    job_is jax-net Running
}
wait_for 120 "jax-net running again after $victim died" restarted
recovered=$((SECONDS - killed_at))
on_victim="$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=jax-net \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' |
  awk -v n="$victim" '$1 == n && NF == 1' | wc -l)"
(( on_victim == 0 )) || fail "the restarted gang has a live pod on the dead node $victim"
ok "$victim killed: jax-net running again as attempt $(kubectl get tj jax-net -n "$NS" \
  -o jsonpath='{.status.attempt}') ${recovered} s later ($(kubectl get tj jax-net -n "$NS" \
  -o jsonpath='{.status.lastRestart.reason}'))"
echo "kubelet e2e passed in $((SECONDS - STARTED)) s"
