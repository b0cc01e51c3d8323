#!/usr/bin/env bash
# Builds the peers bench/peers compares Lockstep with (hack/lib/peer-recipes.sh: Kubeflow
# training-operator, Kueue + JobSet, Kubeflow Trainer + its JobSet, KubeRay, kube-scheduler), each
# pinned, from its own Go module, into $LOCKSTEP_CACHE/tools/<peer>-<version>-<recipe hash>/ with
# the manifests of that module version beside the binary, and links the binaries into
# $LOCKSTEP_CACHE/tools/bin. Opt-in: no test tier and not the demo need them. Cold: minutes per
# peer on two cores; warm: about a second.
#
#   hack/build-peers.sh            # every peer
#   hack/build-peers.sh kueue ...  # only these (names as in PEERS: kube_scheduler,
#                                  # training_operator, kueue_jobset, kueue, trainer_jobset,
#                                  # trainer, kuberay)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO_ROOT/hack/lib/go-build.sh"
source "$REPO_ROOT/hack/lib/peer-recipes.sh"

main() {
  command -v go >/dev/null || die "go is required to build the peers"
  local started=$SECONDS peers=("$@") peer
  (( ${#peers[@]} > 0 )) || peers=("${PEERS[@]}")
  for peer in "${peers[@]}"; do
    declare -F "peer_$peer" >/dev/null || die "unknown peer '$peer' (known: ${PEERS[*]})"
  done
  for peer in "${peers[@]}"; do "peer_$peer"; done
  log "peers ready in $TOOLS_BIN ($((SECONDS - started)) s)"
}
[[ "${BASH_SOURCE[0]}" != "$0" ]] || main "$@"
