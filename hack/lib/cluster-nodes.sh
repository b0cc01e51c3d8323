# Fake GPU nodes of a local cluster, simulated by kwok (sourced by hack/cluster.sh).
# Node i sits in rack floor(i / nodes_per_rack); racks are numbered within blocks, so labels read
# topology.lockstep.dev/block=block-<b>, topology.lockstep.dev/rack=block-<b>-rack-<r>.
# shellcheck shell=bash

node_manifest() {
  local i="$1" racks=$((BLOCKS * RACKS_PER_BLOCK))
  local per_rack=$(( (NODES + racks - 1) / racks ))
  local rack=$(( i / per_rack )); (( rack < racks )) || rack=$((racks - 1))
  local block=$(( rack / RACKS_PER_BLOCK )) rack_in_block=$(( rack % RACKS_PER_BLOCK ))
  cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    kubernetes.io/hostname: gpu-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    topology.lockstep.dev/block: block-$block
    topology.lockstep.dev/rack: block-$block-rack-$rack_in_block
spec: {}
status:
  capacity: {cpu: "96", memory: 1536Gi, pods: "110", nvidia.com/gpu: "$GPUS_PER_NODE"}
  allocatable: {cpu: "96", memory: 1536Gi, pods: "110", nvidia.com/gpu: "$GPUS_PER_NODE"}
NODE
}

count_ready_nodes() {
  KUBECONFIG="$STATE/admin.kubeconfig" "$TOOLS_BIN/kubectl" get nodes -l type=kwok --no-headers \
    2>/dev/null | awk '$2 == "Ready" {n++} END {print n + 0}'
}

all_nodes_ready() { [[ "$(count_ready_nodes)" -ge "$NODES" ]]; }

# Creates missing gpu-node-<i> for i < NODES (existing ones are left alone), then waits for Ready.
ensure_nodes() {
  (( NODES > 0 )) || return 0
  local existing; existing="$(KUBECONFIG="$STATE/admin.kubeconfig" "$TOOLS_BIN/kubectl" get nodes \
    -l type=kwok -o name 2>/dev/null | sed 's|node/||' | sort)"
  local manifest="$STATE/run/nodes.yaml"; : >"$manifest"
  local i missing=0
  for ((i = 0; i < NODES; i++)); do
    grep -qx "gpu-node-$i" <<<"$existing" && continue
    node_manifest "$i" >>"$manifest"; missing=$((missing + 1))
  done
  local started=$SECONDS
  if (( missing > 0 )); then
    log "creating $missing kwok nodes"
    create_nodes_parallel "$manifest"
  fi
  wait_until "$NODES kwok nodes Ready" 300 all_nodes_ready
  log "$NODES nodes Ready $((SECONDS - started))s after creation started"
}

# Creates the documents of a multi-document manifest with 4 kubectl processes.
create_nodes_parallel() {
  local manifest="$1" dir; dir="$(mktemp -d "$STATE/run/nodes.XXXX")"
  awk -v dir="$dir" '/^---$/ {n++} {print > (dir "/" (n % 4) ".yaml")}' "$manifest"
  local pids=()
  for f in "$dir"/*.yaml; do
    KUBECONFIG="$STATE/admin.kubeconfig" "$TOOLS_BIN/kubectl" create -f "$f" >/dev/null &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  rm -rf "$dir"
  (( rc == 0 )) || die "creating nodes failed"
}
