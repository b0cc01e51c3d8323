# Starting, stopping and probing the processes of a local cluster (sourced by hack/cluster.sh).
# Every process is started in its own session and remembered by pid in $STATE/pids, so `down`
# and `restart` touch exactly what `up` started and nothing broader.
# shellcheck shell=bash

# The addresses kwok gives its simulated pods and nodes. Nothing lives there: a process that
# connects to one (the operator's launcher monitor polls worker-0's pod IP of every running job)
# must get an answer from this machine, not send packets out through its default route.
KWOK_POD_CIDR="10.244.0.0/16"
KWOK_POD_CIDR_ARG="10.244.0.1/16"  # the same range as kwok's --cidr takes it (its first address)
KWOK_NODE_IP="10.240.0.1"

# contain_simulated_addresses: `unreachable` routes for kwok's pod range and node address, so a
# connect there fails at once with EHOSTUNREACH (what the operator's probe reads as "no route")
# instead of leaving the machine. Addresses put on lo for a test (the launcher gangs of
# tests/integration/peer_loss and bench/peers) are local routes, which win over these. Idempotent
# and machine-wide, kept after `down` (another cluster may be up; nothing real is in the range).
contain_simulated_addresses() {
  local sudo="" dest
  [[ $(id -u) -eq 0 ]] || sudo="sudo -n"
  for dest in "$KWOK_POD_CIDR" "$KWOK_NODE_IP/32"; do
    $sudo ip route replace unreachable "$dest" 2>/dev/null ||
      die "cannot route $dest to 'unreachable' (needs root: ip route replace unreachable $dest);" \
        "without it, connects to simulated pods would leave this machine"
  done
}

component_args() {
  local pki="$STATE/pki"
  case "$1" in
    etcd)
      echo "$TOOLS_BIN/etcd" --name default --data-dir "$STATE/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" \
        --log-level warn \
        --unsafe-no-fsync --quota-backend-bytes 8589934592 ;;
    apiserver)
      write_audit_policy
      echo "$TOOLS_BIN/kube-apiserver" --bind-address "$API_HOST" --advertise-address "$API_HOST" \
        --secure-port "$APISERVER_PORT" --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
        --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
        --client-ca-file "$pki/ca.crt" \
        --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --api-audiences https://kubernetes.default.svc \
        --authorization-mode Node,RBAC --allow-privileged=true \
        --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
        --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
        --kubelet-certificate-authority "$pki/ca.crt" \
        --kubelet-preferred-address-types InternalIP,Hostname \
        --service-cluster-ip-range 10.96.0.0/16 --enable-priority-and-fairness=false \
        --max-requests-inflight 1600 --max-mutating-requests-inflight 800 \
        --event-ttl 1h --profiling="${LOCKSTEP_APISERVER_PROFILING:-false}" --v 0 \
        --audit-policy-file "$STATE/run/audit-policy.yaml" --audit-log-path "$STATE/logs/audit.log" \
        --audit-log-maxsize 100 --audit-log-maxbackup 1 ;;
    controller-manager)
      echo "$TOOLS_BIN/kube-controller-manager" --kubeconfig "$STATE/controller-manager.kubeconfig" \
        --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
        --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
        --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --cert-dir "$STATE/run/kcm-certs" \
        --leader-elect=false --use-service-account-credentials=true \
        --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
        --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
        --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route' \
        --kube-api-qps 200 --kube-api-burst 400 --concurrent-gc-syncs 20 --v 0 ;;
    kwok)
      {
        # Workers (kwok's default is 4 each): kwok stands in for every node's kubelet, and a
        # kubelet renews its own Lease whatever the others do. kwok's client has no rate limit,
        # so its renewal rate is its Lease workers over the apiserver's latency for one update;
        # 1,000 nodes need 100 a second. 4 workers let renewals fall 20 s behind in a burst of
        # pods (bench/peers, 2026-12-02); 32 held 48 a second at 0.67 s latency (2026-12-03).
        # 256 keep 100 a second up to 2.5 s of latency: each renewal waits for its own
        # request only, as a kubelet's does.
        printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\n'
        printf 'options:\n  nodeLeaseParallelism: 256\n  podPlayStageParallelism: 16\n'
        printf '  nodePlayStageParallelism: 8\n'
        # The pod stages: write_kwok_pod_stages's, or those of `up --kwok-stages`.
        [[ ! -f "$STATE/run/kwok-stages.yaml" ]] || { echo "---"; cat "$STATE/run/kwok-stages.yaml"; }
      } >"$STATE/run/kwok.yaml"
      echo "$TOOLS_BIN/kwok" --kubeconfig "$STATE/kwok.kubeconfig" --config "$STATE/run/kwok.yaml" \
        --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
        --manage-nodes-with-label-selector= --manage-single-node= \
        --cidr "$KWOK_POD_CIDR_ARG" --node-ip "$KWOK_NODE_IP" --node-lease-duration-seconds 40 \
        --server-address "127.0.0.1:$KWOK_PORT" --v WARN ;;
    *) die "unknown component $1" ;;
  esac
}

# write_kwok_pod_stages FILE: kwok's own default pod stages (ready; complete, for pods of a batch
# Job), read from its module at the version built, with hack/kwok/pod-delete.yaml in place of its
# pod-delete, which can delete a pod recreated under the same name (that file says how).
write_kwok_pod_stages() {
  local out="$1" dir stage
  dir="$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir/kustomize/stage/pod/fast" ]] || die "kwok $KWOK_VERSION's module has no pod stages"
  {
    for stage in pod-ready pod-complete; do
      echo "---"
      cat "$dir/kustomize/stage/pod/fast/$stage.yaml"
    done
    echo "---"
    cat "$REPO_ROOT/hack/kwok/pod-delete.yaml"
  } >"$out"
}

# The audit log records the writes (create, update, patch, delete) of users in the group
# lockstep:audited and nothing else, so it costs the other clients nothing. The chaos tests give
# each operator such an identity (`hack/cluster.sh kubeconfig --user U --group lockstep:audited`)
# and read $STATE/logs/audit.log to prove who wrote what, and when (docs/reliability.md).
write_audit_policy() {
  cat >"$STATE/run/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["lockstep:audited"]
  verbs: [create, update, patch, delete, deletecollection]
- level: None
POLICY
}

# The control plane runs ahead of the workload on the CPU. A real cluster gives it machines of its
# own; here it shares 2 cores with every pod the test node agent runs, and at load 15-20 (three
# framework e2e tests, each a Ray or TensorFlow cluster) the apiserver got 20-300 ms of CPU a
# second and answered a Lease renewal in 17 s: every node past the operator's 20-s grace, gangs
# restarted for nothing (2026-12-03). Each component is its own session (setsid), so under the
# kernel's autogroup scheduling it is a group of its own, weighted by the group's nice
# (/proc/self/autogroup) and, without autogroup, by its own (nice). Lowering either needs root:
# as another user the first fails quietly, nice warns in the component's log, and the component
# runs at the default priority.
CONTROL_PLANE_NICE=-10

start_component() {
  local name="$1"
  load_ports
  # shellcheck disable=SC2207
  local args=($(component_args "$name"))
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid nohup sh -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' \
    "$CONTROL_PLANE_NICE" "${args[@]}" \
    >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name"
}

component_alive() {
  local pidfile="$STATE/pids/$1"
  [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

stop_component() {
  local name="$1" pidfile="$STATE/pids/$1"
  [[ -f "$pidfile" ]] || return 0
  local pid; pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
  rm -f "$pidfile"
}

cluster_running() {
  [[ -f "$STATE/ports.env" ]] || return 1
  load_ports
  for c in etcd apiserver controller-manager kwok; do component_alive "$c" || return 1; done
  apiserver_ready
}

apiserver_ready() {
  curl -sf --max-time 2 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" \
    --key "$STATE/pki/admin.key" "https://$API_HOST:$APISERVER_PORT/readyz" >/dev/null 2>&1
}

# wait_until DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.2 s. Gives up at once when a
# started component has died, instead of waiting out the limit, and then shows that component's
# log alone (the last lines of every log bury it; CI's summary cut it off).
wait_until() {
  local what="$1" limit="$2"; shift 2
  local deadline=$((SECONDS + limit))
  until "$@"; do
    local dead; dead="$(dead_component)"
    if [[ -n "$dead" || $SECONDS -ge $deadline ]]; then
      [[ -z "$dead" ]] || log "$dead exited"
      log "gave up after $((SECONDS - deadline + limit))s waiting for $what; last log lines:"
      if [[ -n "$dead" ]]; then tail -n 40 "$STATE/logs/$dead.log" >&2 || true
      else tail -n 20 "$STATE/logs/"*.log >&2 || true; fi
      die "$what did not become ready"
    fi
    sleep 0.2
  done
}

# dead_component: the name of a started component (one with a pid file) that is not running.
dead_component() {
  local c
  for c in etcd apiserver controller-manager kwok kueue kube-scheduler coredns; do
    if [[ -f "$STATE/pids/$c" ]] && ! component_alive "$c"; then echo "$c"; return 0; fi
  done
}

etcd_ready() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" >/dev/null 2>&1; }
wait_etcd() { wait_until etcd 60 etcd_ready; }
wait_apiserver() { wait_until kube-apiserver 120 apiserver_ready; }

# The service-account controller creating `default` proves the controller manager is working.
default_sa_exists() {
  KUBECONFIG="$STATE/admin.kubeconfig" "$TOOLS_BIN/kubectl" get serviceaccount default \
    -n default >/dev/null 2>&1
}
wait_controller_manager() { wait_until kube-controller-manager 120 default_sa_exists; }
