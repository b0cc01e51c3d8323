#!/usr/bin/env bash
# Runs docker/build-in-image.sh, the builder stage of both Dockerfiles, outside Docker into a
# temporary directory, then checks what an image would ship: both binaries exist and run, the
# launcher needs nothing but glibc (it is copied into arbitrary user images), and every shared
# library the operator needs comes from a package the operator image's runtime stage installs.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

started=$SECONDS
# LOCKSTEP_IMAGE_BUILD_DIR keeps the build tree between runs (the output is always fresh).
build_dir=()
[[ -n "${LOCKSTEP_IMAGE_BUILD_DIR:-}" ]] && build_dir=(--build-dir "$LOCKSTEP_IMAGE_BUILD_DIR")
BUILD_JOBS="${BUILD_JOBS:-2}" "$REPO/docker/build-in-image.sh" --out "$OUT" "${build_dir[@]}" ||
  fail "docker/build-in-image.sh failed"
ok "build-in-image.sh built both binaries in $((SECONDS - started))s"
for b in lockstep-operator lockstep-launcher; do
  [[ -x "$OUT/$b" ]] || fail "$b missing from the output"
  file_info="$(od -An -c -N4 "$OUT/$b" | tr -d ' ')"
  [[ "$file_info" == *ELF* ]] || fail "$b is not an ELF binary"
  readelf -S "$OUT/$b" | grep -q '\.debug_info' && fail "$b still carries debug info"
done
grep -q '^build_type=RelWithDebInfo$' "$OUT/BUILD-INFO" || fail "BUILD-INFO lacks the build type"

"$OUT/lockstep-launcher" --help >/dev/null 2>&1 || fail "lockstep-launcher --help failed"
"$OUT/lockstep-operator" --help >/dev/null 2>&1 || fail "lockstep-operator --help failed"
ok "both binaries run (--help)"

# The launcher runs in users' images: only glibc's own libraries may be dynamic.
needed="$(readelf -d "$OUT/lockstep-launcher" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')"
while read -r lib; do
  [[ -z "$lib" ]] && continue
  [[ "$lib" =~ ^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|ld-linux-aarch64)\.so ]] ||
    fail "lockstep-launcher links $lib dynamically; user images may not have it"
done <<<"$needed"
ok "lockstep-launcher needs only glibc: $(tr '\n' ' ' <<<"$needed")"

# Every library the operator loads must come from a package the runtime stage installs, or from
# debian:12-slim itself (libc6, libstdc++6, libgcc-s1 and their dependencies).
runtime="$(sed -n '/^FROM debian:12-slim$/,$p' "$REPO/docker/operator.Dockerfile" |
           sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' | grep -o 'apt-get install[^&]*' |
           tr ' ' '\n' | grep -v '^-' | grep -v -e '^apt-get$' -e '^install$' -e '^$')"
# debian:12-slim already holds libc6, libstdc++6 and libgcc-s1; apt pulls in the dependencies of
# what the stage installs. Their closure is what the image has.
# shellcheck disable=SC2086  # $runtime is a list of package names
closure="$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
             --no-replaces --no-enhances libc6 libstdc++6 libgcc-s1 $runtime 2>/dev/null |
           grep -v '^ ' | sed 's/:.*//' | sort -u)"
[[ -n "$closure" ]] || fail "apt-cache depends gave nothing for: $runtime"
missing=()
while read -r path; do
  [[ -z "$path" ]] && continue
  pkg="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || true)"
  [[ -n "$pkg" ]] || pkg="$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1 || true)"
  [[ -n "$pkg" ]] || fail "no Debian package owns $path"
  grep -qx "$pkg" <<<"$closure" || missing+=("$pkg ($path)")
done < <(ldd "$OUT/lockstep-operator" | awk '/=> \//{print $3}')
(( ${#missing[@]} == 0 )) ||
  fail "operator.Dockerfile's runtime stage lacks packages for: ${missing[*]}"
ok "operator.Dockerfile's runtime packages cover every library lockstep-operator loads"
