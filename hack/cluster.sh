#!/usr/bin/env bash
# The local control plane every Lockstep test, demo and benchmark runs against: a real etcd,
# kube-apiserver (secure port, RBAC + Node authorizers, service-account issuer) and
# kube-controller-manager, plus kwok simulating GPU nodes. Built from source by
# hack/build-tools.sh and cached outside the repository.
#
#   eval "$(hack/cluster.sh up [--name N] [--nodes 16] [--gpus-per-node 8] [--blocks 2]
#                              [--racks-per-block 2] [--kwok-stages FILE] [--with-kueue]
#                              [--kubelet-nodes N] [--registry])"
#                                         # --with-kueue: Kueue runs beside the cluster
#                                         # --kubelet-nodes: N real nodes (kubelet, containerd,
#                                         # kube-proxy) with kube-scheduler and CoreDNS
#                                         # (lib/cluster-kubelet.sh)
#   hack/cluster.sh load-images ARCHIVE... [--name N]
#                                         # docker archives every kubelet node holds (imported
#                                         # now and into nodes started later)
#   hack/cluster.sh kill-node kubelet-node-I [--name N]
#                                         # that real node dies at once: every process of it
#                                         # killed, its network cut
#   hack/cluster.sh kueue [--name N]      # adds Kueue to a running cluster (lib/cluster-kueue.sh)
#   hack/cluster.sh env [--name N]        # the two export lines for a running cluster
#   hack/cluster.sh status [--name N]
#   hack/cluster.sh restart apiserver|etcd|kwok|controller-manager|kueue [--name N]
#   hack/cluster.sh kubeconfig --user U [--group G]... [--name N]
#                                         # a client-certificate kubeconfig for user U in groups G;
#                                         # prints its path. The writes of group lockstep:audited
#                                         # are in $STATE/logs/audit.log (docs/reliability.md)
#   hack/cluster.sh down [--name N]       # stops what `up` and the demo started (by pid), checks
#                                         # that the test node agent left nothing, removes the state
#
# Progress goes to stderr; `up` and `env` end stdout with `export KUBECONFIG=...` and
# `export PATH=...`. State lives in $LOCKSTEP_CACHE/clusters/<name>.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$REPO_ROOT/hack/lib/cluster-pki.sh"
source "$REPO_ROOT/hack/lib/cluster-components.sh"
source "$REPO_ROOT/hack/lib/cluster-nodes.sh"
source "$REPO_ROOT/hack/lib/cluster-agent.sh"
source "$REPO_ROOT/hack/lib/cluster-kueue.sh"
source "$REPO_ROOT/hack/lib/cluster-kubelet.sh"
source "$REPO_ROOT/hack/lib/cluster-registry.sh"

usage() {
  sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

parse_args() {
  CLUSTER_NAME="${LOCKSTEP_CLUSTER_NAME:-lockstep}"
  NODES=16 GPUS_PER_NODE=8 BLOCKS=2 RACKS_PER_BLOCK=2 KWOK_STAGES=""
  COMMAND="${1:-}"; [[ -n "$COMMAND" ]] || usage; shift
  COMPONENT="" USER_NAME="" USER_GROUPS=() WITH_KUEUE=0 KUBELET_NODES=0 ARCHIVES=()
  if [[ "$COMMAND" == restart || "$COMMAND" == kill-node ]]; then
    COMPONENT="${1:-}"; [[ -n "$COMPONENT" ]] || usage; shift
  fi
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --name) CLUSTER_NAME="$2"; shift 2 ;;
      --nodes) NODES="$2"; shift 2 ;;
      --gpus-per-node) GPUS_PER_NODE="$2"; shift 2 ;;
      --blocks) BLOCKS="$2"; shift 2 ;;
      --racks-per-block) RACKS_PER_BLOCK="$2"; shift 2 ;;
      --user) USER_NAME="$2"; shift 2 ;;
      --group) USER_GROUPS+=("$2"); shift 2 ;;
      # kwok Stage documents used instead of write_kwok_pod_stages's (bench/peers: pods of Jobs
      # keep running instead of kwok's default completing them at once).
      --kwok-stages) KWOK_STAGES="$(realpath "$2")"; shift 2 ;;
      --with-kueue) WITH_KUEUE=1; shift ;;
      --registry) WITH_REGISTRY=1; shift ;;  # an OCI registry (lib/cluster-registry.sh)
      --kubelet-nodes) KUBELET_NODES="$2"; shift 2 ;;
      -h|--help) usage ;;
      *) [[ "$COMMAND" == load-images ]] || die "unknown argument: $1"
         ARCHIVES+=("$(realpath "$1")"); shift ;;
    esac
  done
  [[ "$CLUSTER_NAME" =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "--name must be lower-case letters, digits, '-'"
  for n in NODES GPUS_PER_NODE BLOCKS RACKS_PER_BLOCK KUBELET_NODES; do
    [[ "${!n}" =~ ^[0-9]+$ ]] || die "--$(echo "$n" | tr 'A-Z_' 'a-z-') must be a non-negative integer"
  done
  (( BLOCKS > 0 && RACKS_PER_BLOCK > 0 )) || die "--blocks and --racks-per-block must be > 0"
  (( KUBELET_NODES <= 32 )) || die "--kubelet-nodes must be at most 32"
  STATE="$LOCKSTEP_CACHE/clusters/$CLUSTER_NAME"
}

print_env() {
  echo "export KUBECONFIG=$STATE/admin.kubeconfig"
  echo "export PATH=$TOOLS_BIN:\$PATH"
}

cmd_up() {
  if cluster_running; then
    log "cluster '$CLUSTER_NAME' is already running"
    contain_simulated_addresses
    kubelet_nodes_match
    ensure_nodes
    (( WITH_KUEUE == 0 )) || kueue_up
    (( WITH_REGISTRY == 0 )) || registry_up
    print_env
    return 0
  fi
  [[ -x "$TOOLS_BIN/kube-apiserver" && ( KUBELET_NODES -eq 0 || -x "$TOOLS_BIN/kubelet" ) ]] ||
    "$REPO_ROOT/hack/build-tools.sh"
  (( WITH_KUEUE == 0 )) || kueue_ensure_built
  local started=$SECONDS
  rm -rf "$STATE" && mkdir -p "$STATE"/{pki,logs,pids,run}
  if [[ -n "$KWOK_STAGES" ]]; then
    cp "$KWOK_STAGES" "$STATE/run/kwok-stages.yaml"
  else
    write_kwok_pod_stages "$STATE/run/kwok-stages.yaml"
  fi
  API_HOST=127.0.0.1
  if (( KUBELET_NODES > 0 )); then
    # Before the apiserver: it binds to the bridge's host address, where the nodes reach it.
    kubelet_network_up
    API_HOST="$KUBELET_HOST_IP"
  fi
  allocate_ports
  make_pki
  write_kubeconfigs
  (( KUBELET_NODES == 0 )) || kubelet_pki
  contain_simulated_addresses
  start_component etcd && wait_etcd
  start_component apiserver && wait_apiserver
  start_component controller-manager
  start_component kwok
  wait_controller_manager
  echo "$KUBELET_NODES" >"$STATE/run/kubelet-nodes"
  kubelet_nodes_up
  ensure_nodes
  local with=""
  if (( WITH_KUEUE )); then kueue_up; with=", kueue"; fi
  (( KUBELET_NODES == 0 )) || with+=", $KUBELET_NODES kubelet nodes"
  log "cluster '$CLUSTER_NAME' up in $((SECONDS - started))s ($NODES nodes$with)"
  (( WITH_REGISTRY == 0 )) || registry_up
  print_env
}

cmd_down() {
  if [[ ! -d "$STATE" ]]; then log "no cluster '$CLUSTER_NAME'"; return 0; fi
  # Processes that scripts started against this cluster (the demo's operator, ...) register in
  # pids/ too; they go first, then the test node agent (its clean exit deletes its Nodes, so it
  # needs the API server), then the control plane in reverse start order.
  kubelet_nodes_down
  local extra
  for extra in "$STATE"/pids/*; do
    [[ -e "$extra" ]] || continue
    case "$(basename "$extra")" in etcd|apiserver|controller-manager|kwok|agent) ;; *) stop_component "$(basename "$extra")" ;; esac
  done
  agent_stop
  for c in kwok controller-manager apiserver etcd; do stop_component "$c"; done
  # Nothing of the agent may survive: no process, namespace, bridge or veth, mount, state dir.
  local left
  if ! left="$(agent_leftovers)"; then
    printf '%s\n' "$left" >&2
    die "the test node agent left the above behind; $STATE is kept"
  fi
  if ! left="$(kubelet_leftovers)"; then
    printf '%s\n' "$left" >&2
    die "the kubelet nodes left the above behind; $STATE is kept"
  fi
  rm -rf "$STATE"
  log "cluster '$CLUSTER_NAME' stopped and removed"
}

cmd_env() {
  cluster_running || die "cluster '$CLUSTER_NAME' is not running (hack/cluster.sh up --name $CLUSTER_NAME)"
  [[ ! -f "$STATE/pids/registry" ]] || registry_env
  print_env
}

cmd_status() {
  [[ -d "$STATE" ]] || die "no cluster '$CLUSTER_NAME'"
  for c in etcd apiserver controller-manager kwok kube-scheduler coredns; do
    [[ -f "$STATE/pids/$c" ]] || [[ " etcd apiserver controller-manager kwok " == *" $c "* ]] || continue
    if component_alive "$c"; then echo "$c running (pid $(cat "$STATE/pids/$c"))"
    else echo "$c stopped"; fi
  done
  kueue_status
}

cmd_restart() {
  cluster_running || die "cluster '$CLUSTER_NAME' is not running"
  case "$COMPONENT" in
    etcd) stop_component etcd; start_component etcd; wait_etcd; kueue_follow_restart ;;
    apiserver) stop_component apiserver; start_component apiserver; wait_apiserver
      kueue_follow_restart ;;
    kwok) stop_component kwok; start_component kwok ;;
    controller-manager) stop_component controller-manager; start_component controller-manager ;;
    kueue) stop_component kueue; kueue_up ;;
    *) die "restart takes apiserver, etcd, kwok, controller-manager or kueue, not '$COMPONENT'" ;;
  esac
  log "restarted $COMPONENT"
}

cmd_kubeconfig() {
  cluster_running || die "cluster '$CLUSTER_NAME' is not running"
  [[ "$USER_NAME" =~ ^[a-z0-9][a-z0-9.-]*$ ]] || die "--user must be lower-case letters, digits, '.', '-'"
  local subject="" group
  for group in "${USER_GROUPS[@]}"; do
    [[ "$group" =~ ^[a-z0-9:.-]+$ ]] || die "--group must be letters, digits, ':', '.', '-'"
    subject+="/O=$group"
  done
  mkdir -p "$STATE/users"
  sign_cert "user-$USER_NAME" "$subject/CN=$USER_NAME"
  write_kubeconfig "$STATE/users/$USER_NAME.kubeconfig" "user-$USER_NAME"
  echo "$STATE/users/$USER_NAME.kubeconfig"
}

main() {
  parse_args "$@"
  case "$COMMAND" in
    up) cmd_up ;;
    down) cmd_down ;;
    env) cmd_env ;;
    status) cmd_status ;;
    restart) cmd_restart ;;
    kubeconfig) cmd_kubeconfig ;;
    kueue) cluster_running || die "cluster '$CLUSTER_NAME' is not running"; kueue_up ;;
    load-images) cluster_running || die "cluster '$CLUSTER_NAME' is not running"
      kubelet_load_images "${ARCHIVES[@]}" ;;
    kill-node) cluster_running || die "cluster '$CLUSTER_NAME' is not running"
      [[ "$COMPONENT" =~ ^${KUBELET_NODE_PREFIX}([0-9]+)$ ]] ||
        die "kill-node takes a kubelet node's name (${KUBELET_NODE_PREFIX}I), not '$COMPONENT'"
      kubelet_kill_node "${BASH_REMATCH[1]}"; log "killed $COMPONENT" ;;
    *) usage ;;
  esac
}
main "$@"
