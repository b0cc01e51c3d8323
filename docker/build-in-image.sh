#!/usr/bin/env bash
# Builds Lockstep's shipped binaries the way the images do, inside or outside Docker: the builder
# stages of docker/operator.Dockerfile and docker/launcher.Dockerfile run exactly this script, and
# the test suite (tests/integration/helm/build_in_image_test.sh) runs it on the host, so the
# images' build path is exercised where no Docker engine exists.
#
#   docker/build-in-image.sh --out DIR [--build-dir DIR] [--target operator|launcher|all]
#
# Writes DIR/lockstep-operator and/or DIR/lockstep-launcher, stripped, plus DIR/BUILD-INFO
# (compiler, build type, git describe when available). Uses ccache when it is installed.
set -euo pipefail
SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The same configuration hack/test.sh builds and tests with.
BUILD_TYPE=RelWithDebInfo

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "build-in-image: $*" >&2; exit 1; }

OUT="" BUILD_DIR="" TARGET=all
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --target) TARGET="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ -n "$OUT" ]] || usage
case "$TARGET" in
  operator) targets=(lockstep-operator) ;;
  launcher) targets=(lockstep-launcher) ;;
  all) targets=(lockstep-operator lockstep-launcher) ;;
  *) die "--target must be operator, launcher or all" ;;
esac
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD_DIR="${BUILD_DIR:-$OUT/.build}"

launcher_args=()
if command -v ccache >/dev/null; then
  launcher_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Benchmarks are not shipped; tests are only compiled when their targets are asked for.
cmake -S "$SOURCE_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DLOCKSTEP_BUILD_BENCH=OFF -DLOCKSTEP_WERROR=ON "${launcher_args[@]}" >/dev/null
ninja -C "$BUILD_DIR" -j "${BUILD_JOBS:-$(nproc)}" "${targets[@]}"

for t in "${targets[@]}"; do
  [[ -x "$BUILD_DIR/bin/$t" ]] || die "$t was not produced in $BUILD_DIR/bin"
  # Debug info stays in the build directory; the image gets the stripped binary.
  strip --strip-debug -o "$OUT/$t" "$BUILD_DIR/bin/$t"
done
{
  echo "build_type=$BUILD_TYPE"
  echo "compiler=$(c++ --version | head -1)"
  echo "source=$(git -C "$SOURCE_DIR" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "targets=${targets[*]}"
} >"$OUT/BUILD-INFO"
echo "built ${targets[*]} into $OUT" >&2
