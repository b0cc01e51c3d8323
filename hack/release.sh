#!/usr/bin/env bash
# Builds and publishes one Lockstep release to an OCI registry:
#
#   1. every image hack/build-images.sh builds (reproducibly: the same tree gives the same
#      digests), pushed as <registry>/<image name>:VERSION with its digest unchanged;
#   2. the chart, packaged as version VERSION (appVersion VERSION) with the images referenced
#      by digest in its values (image.repository/digest, launcherImage.repository/digest), and
#      pushed as an OCI artifact to oci://<registry>/charts/lockstep:VERSION.
#
#   hack/release.sh VERSION --registry HOST[:PORT][/PATH] [--ca-file FILE] [--build-dir DIR]
#                   [--no-build] [--out DIR] [--examples FRAMEWORK]...
#       --ca-file: the CA that signed the registry's certificate (the local cluster's registry:
#                  none needed once SSL_CERT_FILE is exported by `hack/cluster.sh up --registry`)
#       --no-build: package the binaries the build dir holds (tests, which must not reconfigure it)
#       --out: where the images and the chart package go (default <build dir>/release/VERSION)
#       --examples: passed to hack/build-images.sh (an examples image it builds is pushed too)
#
# Then: helm install lockstep oci://HOST[:PORT][/PATH]/charts/lockstep --version VERSION
# Prints "<reference>@<digest>" for each pushed artifact on stdout (also in <out>/published);
# progress goes to stderr. Needs root (hack/build-images.sh), skopeo, helm.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

parse_args() {
  VERSION="" REGISTRY="" CA_FILE="" BUILD="${LOCKSTEP_BUILD_DIR:-build}" NO_BUILD=() OUT=""
  IMAGE_ARGS=()
  while (( $# > 0 )); do
    case "$1" in
      --registry) REGISTRY="$2"; shift 2 ;;
      --ca-file) CA_FILE="$(realpath "$2")"; shift 2 ;;
      --build-dir) BUILD="$2"; shift 2 ;;
      --no-build) NO_BUILD=(--no-build); shift ;;
      --out) OUT="$2"; shift 2 ;;
      --examples) IMAGE_ARGS+=(--examples "$2"); shift 2 ;;
      -h|--help) usage ;;
      -*) die "unknown argument: $1" ;;
      *) [[ -z "$VERSION" ]] || die "one VERSION only"; VERSION="$1"; shift ;;
    esac
  done
  [[ -n "$VERSION" && -n "$REGISTRY" ]] || usage
  # Helm's rule for chart versions (SemVer 2, no leading v).
  [[ "$VERSION" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] ||
    die "VERSION must be a semantic version such as 0.2.0, not '$VERSION'"
  [[ "$REGISTRY" =~ ^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$ ]] || die "--registry is HOST[:PORT][/PATH]"
  [[ -z "$CA_FILE" || -f "$CA_FILE" ]] || die "--ca-file $CA_FILE does not exist"
  BUILD="$(realpath -m "$BUILD")"
  OUT="$(realpath -m "${OUT:-$BUILD/release/$VERSION}")"
}

check_tools() {
  local t
  for t in skopeo helm python3; do command -v "$t" >/dev/null || die "$t not found (hack/setup.sh)"; done
}

# TLS options for skopeo and helm when a CA file is given.
tls_options() {
  SKOPEO_TLS=() HELM_TLS=()
  [[ -n "$CA_FILE" ]] || return 0
  mkdir -p "$WORK/certs" && cp "$CA_FILE" "$WORK/certs/ca.crt"
  SKOPEO_TLS=(--dest-cert-dir "$WORK/certs")
  HELM_TLS=(--ca-file "$CA_FILE")
}

# push_images: each "<reference> <digest>" build-images.sh wrote; the layout is
# <images>/<last path element of the name>, as build-images.sh names it. --preserve-digests:
# skopeo refuses rather than convert the manifest, so the registry serves the digest that was
# built.
push_images() {
  local ref digest name
  while read -r ref digest; do
    name="${ref%:*}"
    local layout="$OUT/images/${name##*/}" target="$REGISTRY/$name:$VERSION"
    [[ -f "$layout/index.json" ]] || die "no OCI layout $layout for $ref"
    log "pushing $ref ($digest) to $target"
    skopeo copy -q --preserve-digests "${SKOPEO_TLS[@]}" "oci:$layout:$ref" "docker://$target"
    local served
    served="$(skopeo inspect --raw "${SKOPEO_TLS[@]/--dest-/--}" "docker://$REGISTRY/$name@$digest" |
              sha256sum | cut -d' ' -f1)"
    [[ "sha256:$served" == "$digest" ]] || die "$REGISTRY serves $name@$digest as sha256:$served"
    echo "$REGISTRY/$name:$VERSION@$digest" >>"$OUT/published"
    DIGESTS["$name"]="$digest"
  done <"$OUT/images/digests"
}

# set_image_values VALUES KEY REPOSITORY DIGEST: rewrites the repository, tag and digest lines of
# the top-level block KEY in the chart's values.yaml, keeping its comments.
set_image_values() {
  python3 - "$@" <<'PY'
import re, sys
path, key, repository, digest, tag = sys.argv[1:]
lines = open(path).read().split("\n")
start = lines.index(f"{key}:")
want = {"repository": repository, "tag": f'"{tag}"', "digest": f'"{digest}"'}
seen = set()
for i in range(start + 1, len(lines)):
    if lines[i] and not lines[i].startswith((" ", "#")):
        break
    m = re.match(r"^  (repository|tag|digest):", lines[i])
    if m:
        lines[i] = f"  {m.group(1)}: {want[m.group(1)]}"
        seen.add(m.group(1))
if seen != set(want):
    sys.exit(f"{key} in {path} lacks {sorted(set(want) - seen)}")
open(path, "w").write("\n".join(lines))
PY
}

package_chart() {
  local chart="$WORK/chart/lockstep"
  mkdir -p "$WORK/chart" && cp -r "$REPO_ROOT/helm/lockstep" "$chart"
  local key name
  for key in image:lockstep/operator launcherImage:lockstep/launcher; do
    name="${key#*:}"
    [[ -n "${DIGESTS[$name]:-}" ]] || die "build-images.sh built no $name"
    set_image_values "$chart/values.yaml" "${key%%:*}" "$REGISTRY/$name" "${DIGESTS[$name]}" "$VERSION"
  done
  helm lint --strict "$chart" >"$WORK/lint.out" 2>&1 || { cat "$WORK/lint.out" >&2; die "helm lint"; }
  helm package "$chart" --version "$VERSION" --app-version "$VERSION" -d "$OUT" >/dev/null
  CHART_TGZ="$OUT/lockstep-$VERSION.tgz"
  [[ -f "$CHART_TGZ" ]] || die "helm package wrote no $CHART_TGZ"
}

push_chart() {
  log "pushing the chart to oci://$REGISTRY/charts/lockstep:$VERSION"
  helm push "$CHART_TGZ" "oci://$REGISTRY/charts" "${HELM_TLS[@]}" >"$WORK/push.out" 2>&1 ||
    { cat "$WORK/push.out" >&2; die "helm push"; }
  local digest; digest="$(sed -n 's/^Digest: *//p' "$WORK/push.out")"
  [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || { cat "$WORK/push.out" >&2; die "helm push printed no digest"; }
  echo "$REGISTRY/charts/lockstep:$VERSION@$digest" >>"$OUT/published"
}

main() {
  parse_args "$@"
  cd "$REPO_ROOT"
  check_tools
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  tls_options
  rm -rf "$OUT" && mkdir -p "$OUT"
  "$REPO_ROOT/hack/build-images.sh" --build-dir "$BUILD" --out "$OUT/images" "${NO_BUILD[@]}" \
    "${IMAGE_ARGS[@]}"
  declare -gA DIGESTS=()
  push_images
  package_chart
  push_chart
  log "released $VERSION to $REGISTRY; install with:"
  log "  helm install lockstep oci://$REGISTRY/charts/lockstep --version $VERSION"
  cat "$OUT/published"
}
main "$@"
