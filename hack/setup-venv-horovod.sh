#!/usr/bin/env bash
# Prepares .venv-horovod (in the repository root): a second framework venv, beside .venv, with
# real Horovod built from source for PyTorch on the Gloo controller (no MPI), against the torch it
# builds with (hack/requirements-horovod.txt says why torch 2.0.1). The Horovod e2e test runs its
# pods with this venv's python (docs/frameworks.md "Horovod"; tests/e2e/frameworks/).
#
# Like .venv (hack/setup-venv.sh, hack/lib/venv.sh), the venv lives in
# $LOCKSTEP_CACHE/venvs/horovod-<key>, <key> hashing the requirements, this recipe, Python and the
# machine; it is built under a lock and marked complete last, so clones share it.
#
# Cold: ~2 GB of wheels (torch 2.0.1 and its CUDA 11 libraries; only the CPU is used), then
# compiling Horovod's C++ core and torch extension on 2 cores (see the README's setup table for
# the measured time); progress every 30 s. Warm: under a second.
#
#   LOCKSTEP_WITHOUT_HOROVOD=1   skip it (printed); the Horovod e2e test then skips with that
#                                reason instead of failing. A failed build fails setup.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$REPO_ROOT/hack/lib/venv.sh"

LINK="$REPO_ROOT/.venv-horovod"
REQS="$REPO_ROOT/hack/requirements-horovod.txt"
HOROVOD_VERSION="0.28.1"

# Installs the pinned requirements, then builds Horovod against them: PyTorch only, Gloo only.
# HOROVOD_CMAKE names the machine's CMake (Debian's 3.25) so no pip CMake decides the build.
install_horovod_venv() {
  local venv="$1" build_log="$1/.lockstep-horovod-build.log"
  log "installing $REQS into $venv"
  venv_pip "$venv" -r "$REQS"
  log "building horovod $HOROVOD_VERSION (PyTorch, Gloo, no MPI); log: $build_log"
  if ! HOROVOD_WITH_PYTORCH=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
      HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_GLOO=1 HOROVOD_CPU_OPERATIONS=gloo \
      HOROVOD_CMAKE="$(command -v cmake)" MAKEFLAGS="-j${LOCKSTEP_BUILD_JOBS:-2}" \
      venv_pip "$venv" --no-build-isolation --no-binary horovod "horovod==$HOROVOD_VERSION" \
      >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    die "horovod $HOROVOD_VERSION did not build (log: $build_log)"
  fi
  "$venv/bin/python" -c 'import horovod.torch as hvd; assert hvd.gloo_built(), "no gloo"'
  log "horovod $HOROVOD_VERSION built with Gloo"
}

main() {
  if [[ "${LOCKSTEP_WITHOUT_HOROVOD:-0}" == 1 ]]; then
    log "skipping the Horovod venv: LOCKSTEP_WITHOUT_HOROVOD=1 (the Horovod e2e test will skip)"
    return 0
  fi
  command -v cmake >/dev/null || die "cmake is required to build Horovod (hack/setup.sh installs it)"
  local key
  key="$({ cat "$REQS"; declare -f install_horovod_venv venv_pip; echo "$HOROVOD_VERSION"; } |
    venv_hash)"
  local venv="$VENVS/horovod-$key"
  venv_ensure "$venv" install_horovod_venv "building the Horovod venv"
  venv_link "$venv" "$LINK"
  log "horovod venv ready: $LINK"
}
main "$@"
