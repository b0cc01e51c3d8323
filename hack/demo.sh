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

echo
echo "The local cluster '$CLUSTER' is up:"
kubectl get nodes -L topology.lockstep.dev/block,topology.lockstep.dev/rack | head -6
echo "..."
echo
echo "Use it from this shell with:"
echo "  eval \"\$(hack/cluster.sh env --name $CLUSTER)\""
echo "  kubectl get nodes; kubectl get trainingjobs"
echo "Stop it with: hack/cluster.sh down --name $CLUSTER"
