#!/usr/bin/env bash
# Builds Lockstep's two images without a container engine and without pulling a base image:
# each root filesystem holds the build's own binary plus exactly what it needs
# (docker/stage-rootfs.sh, which the Dockerfiles' builder stages run too), packed with umoci into
# an OCI image layout and exported with skopeo as a docker-archive tarball:
#
#   build/images/operator/      OCI layout, tagged lockstep/operator:<chart appVersion>
#   build/images/launcher/      OCI layout, tagged lockstep/launcher:<chart appVersion>
#   build/images/<image>.tar    docker-archive (`docker load -i`, `kind load image-archive`)
#   build/images/examples-<F>/  with --examples F: OCI layout of one uncompressed layer, and
#   build/images/examples-<F>.rootfs/  the tree it packs (hack/lib/examples-image.sh)
#   build/images/digests        "<reference> <manifest digest>" per image
#
# Reproducible: fixed timestamps (SOURCE_DATE_EPOCH, else the last commit's time), root-owned
# files with fixed modes, layer entries in sorted order, so a rebuild of the same tree gives the
# same digests. The test node agent runs pods from these layouts (docs/e2e.md, "Images").
#
#   hack/build-images.sh [--build-dir DIR] [--out DIR] [--no-build] [--examples FRAMEWORK]...
#       --no-build: pack the binaries the build dir holds (tests, which must not reconfigure it)
#       --examples jax|pytorch: also lockstep/examples-<F>, the training image the examples run
#         in on real kubelet nodes (hack/lib/examples-image.sh), as build/images/examples-<F>/
#   hack/build-images.sh --print-recipe operator|launcher
#       what the image holds and how it starts, in Dockerfile syntax (the Dockerfile test
#       compares it with docker/<image>.Dockerfile's final stage)
#
# Environment: LOCKSTEP_BUILD_DIR (build). Needs umoci, skopeo and busybox-static (hack/setup.sh)
# and root, so that the layers' files are owned by root.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$REPO_ROOT/hack/lib/examples-image.sh"

IMAGES=(operator launcher)

# The image configurations. docker/<image>.Dockerfile's final stage says the same.
recipe() {
  USER=65532:65532 ENTRYPOINT=() CMD=() PORTS=()
  case "$1" in
    operator) ENTRYPOINT=(/lockstep-operator) PORTS=(8080 8081) ;;
    launcher) ENTRYPOINT=(/bin/cp) CMD=(--help) ;;
    examples-*) CMD=(python3) ;;
    *) die "unknown image $1 (operator or launcher)" ;;
  esac
}

json_array() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }

print_recipe() {
  recipe "$1"
  echo "FROM scratch"
  echo "COPY <docker/stage-rootfs.sh --image $1> /"
  echo "USER $USER"
  (( ${#PORTS[@]} == 0 )) || echo "EXPOSE ${PORTS[*]}"
  echo "ENTRYPOINT $(json_array "${ENTRYPOINT[@]}")"
  (( ${#CMD[@]} == 0 )) || echo "CMD $(json_array "${CMD[@]}")"
}

chart_app_version() {
  sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$REPO_ROOT/helm/lockstep/Chart.yaml"
}

check_tools() {
  local missing=() tool
  for tool in umoci skopeo strip ldd; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [[ -x /bin/busybox ]] || missing+=(busybox-static)
  (( ${#missing[@]} == 0 )) || die "missing ${missing[*]}: run hack/setup.sh"
  (( EUID == 0 )) || die "run as root: the images' files must be owned by root"
}

# pack IMAGE REF BINDIR: stages the root filesystem into an umoci bundle of an empty image and
# packs it as one layer, then sets the configuration; no history entry or blob depends on the
# clock.
pack() {
  local image="$1" ref="$2" bin="$3" layout="$OUT/$1" bundle="$WORK/$1-bundle"
  local created; created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
  rm -rf "$layout" "$bundle"
  umoci init --layout "$layout"
  umoci new --image "$layout:build"
  umoci unpack --image "$layout:build" "$bundle" >/dev/null
  local staged_by="docker/stage-rootfs.sh --image $image"
  "$REPO_ROOT/docker/stage-rootfs.sh" --image "$image" --bin "$bin" --out "$bundle/rootfs"
  touch -h -d "@$SOURCE_DATE_EPOCH" "$bundle/rootfs"
  umoci repack --image "$layout:build" --history.created "$created" \
    --history.created_by "$staged_by" "$bundle"
  recipe "$image"
  local args=(--no-history --created "$created" --config.user "$USER") part
  for part in "${ENTRYPOINT[@]}"; do args+=(--config.entrypoint "$part"); done
  for part in "${CMD[@]}"; do args+=(--config.cmd "$part"); done
  for part in "${PORTS[@]}"; do args+=(--config.exposedports "$part/tcp"); done
  umoci config --image "$layout:build" "${args[@]}"
  umoci tag --image "$layout:build" "$ref"
  umoci rm --image "$layout:build"
  umoci gc --layout "$layout"
  rm -rf "$bundle"
  rm -f "$OUT/$image.tar"
  skopeo copy -q "oci:$layout:$ref" "docker-archive:$OUT/$image.tar:$ref"
}

# report IMAGE REF: the manifest digest into $OUT/digests, and the sizes.
report() {
  local image="$1" ref="$2" layout="$OUT/$1"
  python3 - "$layout" "$ref" "$OUT/$image.tar" "$OUT/$image.rootfs" <<'PY'
import json, os, sys
layout, ref, archive, rootfs = sys.argv[1:]
blob = lambda d: os.path.join(layout, "blobs", *d.split(":"))
index = json.load(open(os.path.join(layout, "index.json")))
desc = next(m for m in index["manifests"]
            if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref)
manifest = json.load(open(blob(desc["digest"])))
compressed = sum(layer["size"] for layer in manifest["layers"])
print(f"{ref} {desc['digest']}", file=open(os.path.join(os.path.dirname(layout), "digests"), "a"))
mib = lambda n: f"{n / 1048576:.1f} MiB"
if os.path.exists(archive):
    print(f"  {ref}: {desc['digest']}\n    layers {mib(compressed)} compressed, "
          f"docker-archive {mib(os.path.getsize(archive))} (uncompressed)", file=sys.stderr)
else:
    files = [os.path.join(d, f) for d, _, fs in os.walk(rootfs) for f in fs]
    unpacked = sum(os.lstat(f).st_size for f in files)
    print(f"  {ref}: {desc['digest']}\n    layer {mib(compressed)} (uncompressed tar), "
          f"root filesystem {mib(unpacked)} in {len(files)} files", file=sys.stderr)
PY
}

# pack_examples IMAGE REF: an examples image is a pure function of its inputs (the cached wheels'
# directory, the examples' scripts, the interpreter, these recipes, its reference and time
# stamp), so it is packed once per such key into $LOCKSTEP_CACHE/images/ and hard-linked from
# there: the OCI layout $OUT/IMAGE (one uncompressed layer, examples_pack_layout) and the root
# filesystem it packs, $OUT/IMAGE.rootfs, which the kubelet nodes load (kubelet_import). No
# docker archive: it would be a third copy of a 5.4 GB PyTorch image (the nodes import the layout
# or its tree; `skopeo copy oci:...` makes one where one is wanted).
# Its time stamp is the last commit of what goes into it, so unrelated commits keep the key.
pack_examples() {
  local image="$1" ref="$2" fw="${1#examples-}" site key
  local epoch; epoch="$(git -C "$REPO_ROOT" log -1 --format=%ct -- examples/frameworks \
    hack/lib/examples-image.sh "hack/requirements-examples-$fw.txt" 2>/dev/null || echo 0)"
  site="$(examples_site_dir "$fw")"
  key="$({ echo "$site $ref ${epoch:-0}"; sha256sum "$EXAMPLES_PYTHON"
    (cd "$REPO_ROOT" && find examples/frameworks -type f ! -path '*/__pycache__/*' -print0 |
      sort -z | xargs -0 sha256sum)
    declare -f pack_examples recipe stage_examples_rootfs examples_shared_libraries \
      examples_pack_layout; } | sha256sum | cut -c1-16)"
  local cached="$LOCKSTEP_CACHE/images/$image-$key"
  if [[ ! -f "$cached/$image/index.json" ]]; then
    log "packing $ref (once per content: $cached)"
    rm -rf "$cached.partial" && mkdir -p "$cached.partial"
    local created; created="$(date -u -d "@${epoch:-0}" +%Y-%m-%dT%H:%M:%SZ)"
    (SOURCE_DATE_EPOCH="${epoch:-0}" && stage_examples_rootfs "$fw" "$cached.partial/$image.rootfs")
    recipe "$image"
    examples_pack_layout "$cached.partial/$image.rootfs" "$cached.partial/$image" "$ref" \
      "$created" "hack/lib/examples-image.sh $fw" "$USER" "${CMD[@]}"
    rm -rf "$cached" && mv "$cached.partial" "$cached"
    # The wheels are in the image's tree now (5.3 GB for PyTorch): a new key installs them again.
    rm -rf "$site" "$site.lock"
  fi
  rm -rf "${OUT:?}/$image" "$OUT/$image.rootfs" "$OUT/$image.tar"
  cp -al "$cached/$image" "$cached/$image.rootfs" "$OUT/" 2>/dev/null ||
    cp -a "$cached/$image" "$cached/$image.rootfs" "$OUT/"
  prune_examples_cache "$image" "$cached"
}

# prune_examples_cache IMAGE KEEP: removes IMAGE's keys in the cache other than KEEP, those packed
# as pack_examples packs (the tree beside the layout). A key of examples-pytorch is 10.8 GB, and
# every commit to what goes into it makes a new one; what was hard-linked out of a removed key
# stays whole.
prune_examples_cache() {
  local dir
  for dir in "$LOCKSTEP_CACHE/images/$1"-????????????????; do
    [[ "$dir" == "$2" || ! -d "$dir/$1.rootfs" ]] || rm -rf "$dir"
  done
}

main() {
  local build="${LOCKSTEP_BUILD_DIR:-build}" no_build="" examples=()
  OUT=""
  while (( $# > 0 )); do
    case "$1" in
      --build-dir) build="$2"; shift 2 ;;
      --out) OUT="$2"; shift 2 ;;
      --no-build) no_build=1; shift ;;
      --examples) examples+=("$2"); shift 2 ;;
      --print-recipe) print_recipe "$2"; return ;;
      -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; return 2 ;;
      *) die "unknown argument: $1" ;;
    esac
  done
  cd "$REPO_ROOT"
  check_tools
  build="$(realpath -m "$build")"
  OUT="$(realpath -m "${OUT:-$build/images}")"
  SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
  export SOURCE_DATE_EPOCH
  local version; version="$(chart_app_version)"
  [[ -n "$version" ]] || die "no appVersion in helm/lockstep/Chart.yaml"

  if [[ -z "$no_build" ]]; then
    source "$REPO_ROOT/hack/lib/build.sh"  # configure_and_build
    configure_and_build "$build" -- lockstep-operator lockstep-launcher
  fi
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  mkdir -p "$WORK/bin" "$OUT"
  local b
  for b in lockstep-operator lockstep-launcher; do
    # What docker/build-in-image.sh ships: debug info stays in the build tree.
    strip --strip-debug -o "$WORK/bin/$b" "$build/bin/$b"
  done
  rm -f "$OUT/digests"
  local image
  for image in "${IMAGES[@]}" "${examples[@]/#/examples-}"; do
    log "packing lockstep/$image:$version into $OUT/$image"
    if [[ "$image" == examples-* ]]; then
      pack_examples "$image" "lockstep/$image:$version"
    else
      pack "$image" "lockstep/$image:$version" "$WORK/bin"
    fi
    report "$image" "lockstep/$image:$version"
  done
}
main "$@"
