#!/usr/bin/env bash
# Stages the root filesystem of one Lockstep image: the one place that decides which files an
# image holds and where. Both ways of building the images run it: the builder stage of
# docker/<image>.Dockerfile (whose final stage is `FROM scratch` + `COPY --from=builder /rootfs/ /`)
# and hack/build-images.sh (which packs the directory with umoci), so they ship the same files at
# the same paths; tests/unit/helm/dockerfiles_test.sh checks that both call it that way.
#
#   docker/stage-rootfs.sh --image operator|launcher --bin DIR --out DIR
#
# operator: /lockstep-operator; every shared library it loads, at the path the dynamic loader
#   finds it (ldd), copied from the files those paths resolve to; the CA bundle (for kubeconfigs
#   that name no CA); /etc/passwd and /etc/group naming uid and gid 65532 (the chart's runAsUser);
#   an empty /tmp (the chart mounts an emptyDir there: the root filesystem is read-only).
# launcher: /lockstep-launcher and a static busybox as /bin/cp: the operator's init container
#   runs `cp /lockstep-launcher /lockstep/bin/lockstep-launcher` (operator/api/children.cc). The
#   launcher itself runs inside users' training images, never in this one.
# Everything is owned by root with fixed modes, and every timestamp is SOURCE_DATE_EPOCH (0 when
# unset), so the same binaries give the same tree. --out must be missing or empty.
set -euo pipefail

die() { echo "stage-rootfs: $*" >&2; exit 1; }
usage() { sed -n '8,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

IMAGE="" BIN="" OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --image) IMAGE="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ -n "$IMAGE" && -n "$BIN" && -n "$OUT" ]] || usage
mkdir -p "$OUT"
[[ -z "$(ls -A "$OUT")" ]] || die "$OUT is not empty"

# put SOURCE MODE PATH: SOURCE's content (symlinks followed) at PATH inside the image.
put() {
  [[ -f "$1" ]] || die "$1 does not exist"
  install -D -o 0 -g 0 -m "$2" "$(readlink -f "$1")" "$OUT$3"
}

# put_text MODE PATH TEXT: a small file written here.
put_text() {
  mkdir -p "$(dirname "$OUT$2")"
  printf '%s' "$3" >"$OUT$2"
  chown 0:0 "$OUT$2" && chmod "$1" "$OUT$2"
}

# The shared libraries BINARY loads, one path per line: what the loader resolves (the `=> /path`
# entries) and the loader itself. A library ldd cannot find fails the image.
shared_libraries() {
  local report; report="$(ldd "$1")" || die "ldd $1 failed"
  ! grep -q 'not found' <<<"$report" || die "$1 needs libraries this system lacks: $report"
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$report" | sort -u
}

stage_operator() {
  put "$BIN/lockstep-operator" 0555 /lockstep-operator
  local lib mode
  while read -r lib; do
    # The loader is executed by the kernel; libraries are only mapped.
    mode=0644; [[ "$(basename "$lib")" == ld-linux* ]] && mode=0755
    put "$lib" "$mode" "$lib"
  done < <(shared_libraries "$BIN/lockstep-operator")
  put /etc/ssl/certs/ca-certificates.crt 0644 /etc/ssl/certs/ca-certificates.crt
  put_text 0644 /etc/passwd \
    $'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n'
  put_text 0644 /etc/group $'root:x:0:\nnonroot:x:65532:\n'
  install -d -o 0 -g 0 -m 1777 "$OUT/tmp"
}

stage_launcher() {
  put "$BIN/lockstep-launcher" 0555 /lockstep-launcher
  # Debian's busybox-static: one statically linked file that acts as `cp` under that name.
  if ldd /bin/busybox >/dev/null 2>&1; then die "/bin/busybox is not static (install busybox-static)"; fi
  put /bin/busybox 0555 /bin/cp
}

case "$IMAGE" in
  operator) stage_operator ;;
  launcher) stage_launcher ;;
  *) die "--image must be operator or launcher" ;;
esac
# Directories made on the way keep the umask's mode; make them the same everywhere.
find "$OUT" -mindepth 1 -type d ! -path "$OUT/tmp" -exec chmod 0755 {} +
chown -R 0:0 "$OUT"
find "$OUT" -exec touch -h -d "@${SOURCE_DATE_EPOCH:-0}" {} +
