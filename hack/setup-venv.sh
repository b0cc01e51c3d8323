#!/usr/bin/env bash
# Creates .venv/ in the repository root with the real training frameworks the launcher tests run
# (hack/requirements-frameworks.txt), then tries to build Horovod against the venv's torch.
# Idempotent: an existing venv is never recreated (other scripts add packages to it), and pip runs
# only when the hash of the requirements differs from the stamp of the last successful install, so
# a warm run takes about a second. pip's cache lives under $LOCKSTEP_CACHE/pip and survives
# deleting the venv.
#   LOCKSTEP_WITH_HOROVOD=1   also try to build Horovod from source against the venv's torch. Off by
#                             default: Horovod 0.28.1 (the last release, 2023) compiles its torch
#                             extension as C++14 and torch >= 2.10 headers require C++20, so the
#                             build fails after ~10 minutes of compiling; the tests then cover our
#                             Gloo KV server with a client that speaks Horovod's protocol.
#   LOCKSTEP_RETRY_HOROVOD=1  try the Horovod build again even though the stamp says it failed
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

VENV="$REPO_ROOT/.venv"
REQS="$REPO_ROOT/hack/requirements-frameworks.txt"
HOROVOD_VERSION="${HOROVOD_VERSION:-0.28.1}"
PIP_CACHE="$LOCKSTEP_CACHE/pip"
STAMP="$VENV/.lockstep-frameworks.stamp"
HOROVOD_STAMP="$VENV/.lockstep-horovod.stamp"   # "<hash> ok" or "<hash> failed"

pip_install() {
  "$VENV/bin/python" -m pip install --cache-dir "$PIP_CACHE" --disable-pip-version-check \
    --progress-bar off "$@"
}

ensure_venv() {
  if [[ -x "$VENV/bin/python" ]]; then
    return 0
  fi
  log "creating $VENV"
  python3 -m venv "$VENV"
}

install_frameworks() {
  local want; want="$(sha256sum "$REQS" | cut -d' ' -f1)"
  if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    return 0
  fi
  log "installing frameworks from $REQS (slow the first time; pip cache: $PIP_CACHE)"
  mkdir -p "$PIP_CACHE"
  pip_install -r "$REQS"
  echo "$want" >"$STAMP"
}

# Horovod 0.28.1 is the last release (2023) and builds from source only. A failed build is recorded
# so later runs stay fast; the tests then exercise our Gloo KV server with a protocol client.
install_horovod() {
  [[ "${LOCKSTEP_WITH_HOROVOD:-0}" == 1 ]] || return 0
  local torch_version
  torch_version="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
  local want="horovod-$HOROVOD_VERSION-torch-$torch_version"
  if [[ -f "$HOROVOD_STAMP" ]]; then
    local have; have="$(cat "$HOROVOD_STAMP")"
    [[ "$have" == "$want ok" ]] && return 0
    if [[ "$have" == "$want failed" && "${LOCKSTEP_RETRY_HOROVOD:-0}" != 1 ]]; then
      return 0
    fi
  fi
  log "building horovod $HOROVOD_VERSION against torch $torch_version (gloo only, no MPI)"
  pip_install cmake wheel setuptools packaging psutil pyyaml cloudpickle
  local build_log="$VENV/.lockstep-horovod-build.log"
  if HOROVOD_WITH_PYTORCH=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
      HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_GLOO=1 HOROVOD_CPU_OPERATIONS=gloo \
      MAKEFLAGS="-j${LOCKSTEP_BUILD_JOBS:-2}" \
      pip_install --no-build-isolation "horovod==$HOROVOD_VERSION" >"$build_log" 2>&1 &&
      "$VENV/bin/python" -c 'import horovod.torch' >>"$build_log" 2>&1; then
    echo "$want ok" >"$HOROVOD_STAMP"
    log "horovod $HOROVOD_VERSION built"
  else
    echo "$want failed" >"$HOROVOD_STAMP"
    log "horovod did not build against torch $torch_version (see $build_log); tests use the" \
      "Gloo KV protocol client instead"
  fi
}

ensure_venv
install_frameworks
install_horovod
log "venv ready: $VENV"
