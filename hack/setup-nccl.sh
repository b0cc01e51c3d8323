#!/usr/bin/env bash
# Installs NCCL (the nvidia-nccl-cu13 wheel) into the repository's .venv and prints the path of the
# libnccl.so.2 it contains. The launcher dlopens that library (--nccl-library /
# LOCKSTEP_NCCL_LIBRARY); ncclGetUniqueId works without a GPU, so the launcher tests use it here.
#
# Usage: hack/setup-nccl.sh            # install if missing, print the library path on stdout
# The venv is shared with the frameworks' packages: it is created only when absent, never recreated.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"
NCCL_WHEEL="${NCCL_WHEEL:-nvidia-nccl-cu13}"

find_lib() {
  local lib
  for lib in "$VENV"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do
    if [[ -f "$lib" ]]; then printf '%s\n' "$lib"; return 0; fi
  done
  return 1
}

if lib="$(find_lib)"; then
  printf '%s\n' "$lib"
  exit 0
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating $VENV" >&2
  python3 -m venv "$VENV"
fi
echo "installing $NCCL_WHEEL into $VENV" >&2
"$VENV/bin/python" -m pip install --quiet "$NCCL_WHEEL" >&2
lib="$(find_lib)" || { echo "error: $NCCL_WHEEL installed but libnccl.so.2 not found" >&2; exit 1; }
printf '%s\n' "$lib"
