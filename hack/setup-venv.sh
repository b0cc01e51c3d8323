#!/usr/bin/env bash
# Prepares .venv (in the repository root) with the real training frameworks the launcher tests run
# (hack/requirements-frameworks.txt) plus NCCL (the wheel hack/setup-nccl.sh looks for), then
# optionally tries to build Horovod against the venv's torch.
#
# The venv lives outside the clone, in $LOCKSTEP_CACHE/venvs/<key>, and .venv is a symlink to it.
# <key> hashes the requirements file, the NCCL wheel's name, the Python version and the machine, so
# a fresh clone of an unchanged tree links the existing venv in well under a second instead of
# reinstalling ~5 GB of wheels (2.5 min from the pip cache), and editing a pin makes a new venv
# beside the old one instead of mutating a venv another clone is testing with.
#
# Concurrency: clones may run this at the same moment. A venv cannot be built in a temp dir and
# renamed into place, because pip writes the venv's absolute path into every console script's
# shebang (torchrun, ray, ...). Instead the venv is built at its final path while holding
# <key>.lock (flock), and the marker file .lockstep-complete is written last: a venv without the
# marker is a build that died half-way, and the next holder of the lock deletes and rebuilds it.
# Nobody links a venv before its marker exists.
#
# A .venv that is a real directory (clones from before the shared venvs) is kept and updated in
# place as before; delete it to switch to the shared venv.
#
#   LOCKSTEP_WITH_HOROVOD=1   also try to build Horovod from source against the venv's torch. Off by
#                             default: Horovod 0.28.1 (the last release, 2023) compiles its torch
#                             extension as C++14 and torch >= 2.10 headers require C++20, so the
#                             build fails after ~10 minutes of compiling; the tests then cover our
#                             Gloo KV server with a client that speaks Horovod's protocol.
#   LOCKSTEP_RETRY_HOROVOD=1  try the Horovod build again even though the stamp says it failed
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

LINK="$REPO_ROOT/.venv"
REQS="$REPO_ROOT/hack/requirements-frameworks.txt"
NCCL_WHEEL="${NCCL_WHEEL:-nvidia-nccl-cu13}"
HOROVOD_VERSION="${HOROVOD_VERSION:-0.28.1}"
PIP_CACHE="$LOCKSTEP_CACHE/pip"
VENVS="$LOCKSTEP_CACHE/venvs"
COMPLETE_MARKER=".lockstep-complete"
VENV=""   # the venv being prepared: the shared one, or a legacy in-clone directory

pip_install() {
  "$VENV/bin/python" -m pip install --cache-dir "$PIP_CACHE" --disable-pip-version-check \
    --progress-bar off "$@"
}

# The shared venv's name: everything that decides its contents, hashed: the requirements, the
# text of the functions that build it (its recipe), the NCCL wheel, Python and the machine.
venv_key() {
  local py; py="$(python3 -c 'import sys; print(sys.version.split()[0])')"
  {
    cat "$REQS"
    declare -f pip_install install_frameworks build_shared_venv
    echo "nccl=$NCCL_WHEEL"; echo "python=$py"; uname -m
  } | sha256sum | cut -c1-16
}

install_frameworks() {
  log "installing frameworks from $REQS into $VENV (slow the first time; pip cache: $PIP_CACHE)"
  mkdir -p "$PIP_CACHE"
  pip_install -r "$REQS"
  pip_install "$NCCL_WHEEL"
}

# Builds the shared venv unless a complete one exists. Runs under the key's lock.
build_shared_venv() {
  [[ -f "$VENV/$COMPLETE_MARKER" ]] && return 0
  if [[ -e "$VENV" ]]; then
    log "removing $VENV: an earlier build of it did not finish"
    rm -rf "$VENV"
  fi
  log "creating $VENV"
  python3 -m venv "$VENV"
  with_heartbeat "installing the frameworks (~2.5 min from PyPI the first time)" \
    install_frameworks
  date -u +%FT%TZ >"$VENV/$COMPLETE_MARKER"
}

# Points .venv at the shared venv; a new symlink renamed over the old one, so .venv never dangles.
link_venv() {
  [[ "$(readlink "$LINK" 2>/dev/null || true)" == "$VENV" ]] && return 0
  ln -sfn "$VENV" "$LINK.tmp.$$"
  mv -T "$LINK.tmp.$$" "$LINK"
  log "linked $LINK -> $VENV"
}

# Legacy: a real .venv directory in the clone, updated in place when the requirements change.
update_local_venv() {
  local stamp="$VENV/.lockstep-frameworks.stamp" want
  want="$(sha256sum "$REQS" | cut -d' ' -f1)"
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && return 0
  with_heartbeat "installing the frameworks (~2.5 min from PyPI the first time)" \
    install_frameworks
  echo "$want" >"$stamp"
}

# Horovod 0.28.1 is the last release (2023) and builds from source only. A failed build is recorded
# so later runs stay fast; the tests then exercise our Gloo KV server with a protocol client.
install_horovod() {
  [[ "${LOCKSTEP_WITH_HOROVOD:-0}" == 1 ]] || return 0
  local horovod_stamp="$VENV/.lockstep-horovod.stamp"   # "<want> ok" or "<want> failed"
  local torch_version
  torch_version="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
  local want="horovod-$HOROVOD_VERSION-torch-$torch_version"
  if [[ -f "$horovod_stamp" ]]; then
    local have; have="$(cat "$horovod_stamp")"
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
    echo "$want ok" >"$horovod_stamp"
    log "horovod $HOROVOD_VERSION built"
  else
    echo "$want failed" >"$horovod_stamp"
    log "horovod did not build against torch $torch_version (see $build_log); tests use the" \
      "Gloo KV protocol client instead"
  fi
}

main() {
  if [[ -d "$LINK" && ! -L "$LINK" ]]; then
    VENV="$LINK"
    log "keeping the venv directory $LINK (delete it to share one from $VENVS)"
    update_local_venv
    install_horovod
  else
    VENV="$VENVS/$(venv_key)"
    # Fast path: a complete venv needs no lock (it is never modified without one, except by the
    # opt-in Horovod build below).
    if [[ ! -f "$VENV/$COMPLETE_MARKER" || "${LOCKSTEP_WITH_HOROVOD:-0}" == 1 ]]; then
      mkdir -p "$VENVS"
      exec 9>"$VENV.lock"
      flock 9
      build_shared_venv
      install_horovod
      exec 9>&-
    fi
    link_venv
  fi
  log "venv ready: $LINK"
}
main "$@"
