#!/usr/bin/env bash
# Prepares .venv (in the repository root) with the real training frameworks the launcher and e2e
# tests run (hack/requirements-frameworks.txt) plus NCCL (the wheel hack/setup-nccl.sh looks for).
# Real Horovod needs an older torch and has a venv of its own: hack/setup-venv-horovod.sh.
#
# The venv lives outside the clone, in $LOCKSTEP_CACHE/venvs/<key>, and .venv is a symlink to it
# (hack/lib/venv.sh: locking, completion marker). <key> hashes the requirements file, this recipe,
# the NCCL wheel's name, the Python version and the machine, so a fresh clone of an unchanged tree
# links the existing venv in well under a second instead of reinstalling ~5 GB of wheels, and
# editing a pin makes a new venv beside the old one instead of mutating a venv another clone is
# testing with.
#
# A .venv that is a real directory (clones from before the shared venvs) is kept and updated in
# place; delete it to switch to the shared venv.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$REPO_ROOT/hack/lib/venv.sh"

LINK="$REPO_ROOT/.venv"
REQS="$REPO_ROOT/hack/requirements-frameworks.txt"
NCCL_WHEEL="${NCCL_WHEEL:-nvidia-nccl-cu13}"

install_frameworks() {
  local venv="$1"
  log "installing frameworks from $REQS into $venv (slow the first time; pip cache: $PIP_CACHE)"
  venv_pip "$venv" -r "$REQS"
  venv_pip "$venv" "$NCCL_WHEEL"
}

# Legacy: a real .venv directory in the clone, updated in place when the requirements change.
update_local_venv() {
  local stamp="$LINK/.lockstep-frameworks.stamp" want
  want="$(sha256sum "$REQS" | cut -d' ' -f1)"
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && return 0
  with_heartbeat "installing the frameworks" install_frameworks "$LINK"
  echo "$want" >"$stamp"
}

main() {
  if [[ -d "$LINK" && ! -L "$LINK" ]]; then
    log "keeping the venv directory $LINK (delete it to share one from $VENVS)"
    update_local_venv
  else
    local key
    key="$({ cat "$REQS"; declare -f install_frameworks venv_pip; echo "nccl=$NCCL_WHEEL"; } |
      venv_hash)"
    venv_ensure "$VENVS/$key" install_frameworks "installing the framework venv"
    venv_link "$VENVS/$key" "$LINK"
  fi
  log "venv ready: $LINK"
}
main "$@"
