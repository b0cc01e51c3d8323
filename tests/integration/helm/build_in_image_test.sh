#!/usr/bin/env bash
# Runs docker/build-in-image.sh, the builder stage of both Dockerfiles, outside Docker into a
# temporary directory, then checks what an image would ship: both binaries exist and run, the
# launcher needs nothing but glibc (it is copied into arbitrary user images), and the operator
# runs inside the root filesystem its image ships (chroot, when root).
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

# The operator image's root (docker/stage-rootfs.sh, what both Dockerfiles' final stages and
# hack/build-images.sh ship) must hold everything the operator loads: it runs chrooted into it.
if (( EUID == 0 )); then
  "$REPO/docker/stage-rootfs.sh" --image operator --bin "$OUT" --out "$OUT/rootfs" ||
    fail "docker/stage-rootfs.sh failed"
  chroot "$OUT/rootfs" /lockstep-operator --help >/dev/null 2>&1 ||
    fail "lockstep-operator does not run in its image's root filesystem"
  ok "lockstep-operator runs in its staged root ($(du -sh "$OUT/rootfs" | cut -f1))"
else
  echo "note: not root; the staged root filesystem is not checked"
fi
