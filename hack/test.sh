#!/usr/bin/env bash
# Runs every test tier of Lockstep from a fresh clone on a fresh machine:
#   setup (hack/setup.sh) -> build (build/, and build-asan/ with ASan+UBSan) ->
#   unit (sanitized) -> integration, launcher, e2e (against one local control plane) -> summary.
#
#   hack/test.sh                 everything
#   hack/test.sh unit            only some tiers (unit integration launcher e2e)
#
# Environment: LOCKSTEP_CACHE (tool/pip/ccache/venv caches, default ~/.cache/lockstep),
# LOCKSTEP_TEST_CLUSTER (cluster name, default lockstep-test), CTEST_ARGS (extra ctest flags).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_ROOT"

TIERS=("$@")
(( ${#TIERS[@]} > 0 )) || TIERS=(unit integration launcher e2e)
CLUSTER="${LOCKSTEP_TEST_CLUSTER:-lockstep-test}"
RESULTS="$REPO_ROOT/build/test-results"
TOTAL_PASSED=0 TOTAL_FAILED=0 FAILED_TIERS=()

want_tier() { local t; for t in "${TIERS[@]}"; do [[ "$t" == "$1" ]] && return 0; done; return 1; }

export CCACHE_DIR="$LOCKSTEP_CACHE/ccache" CCACHE_BASEDIR="$REPO_ROOT" CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE=5G

# configure_and_build DIR [CMAKE_ARGS...]
configure_and_build() {
  local dir="$1"; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache "$@" >/dev/null
  ninja -C "$dir" -j "$(nproc)"
}

# unit_targets: the executables behind the unit tier, read from build/ (configured and built
# first), so build-asan/ builds only those instead of every integration, launcher and e2e binary.
unit_targets() {
  ctest --test-dir build -L '^unit$' --show-only=json-v1 | python3 -c '
import json, os, sys
tests = json.load(sys.stdin)["tests"]
print("\n".join(sorted({os.path.basename(t["command"][0]) for t in tests
                         if t.get("command") and "/tests/" in t["command"][0]})))'
}

# unit_test_count DIR: how many tests carry the unit label in DIR.
unit_test_count() {
  ctest --test-dir "$1" -L '^unit$' -N | sed -nE 's/^Total Tests: ([0-9]+)$/\1/p'
}

# build_asan_unit: build-asan/ with only the unit tier's targets. A unit binary that was not
# built would silently drop its tests from the tier, so the counts of both trees must agree.
build_asan_unit() {
  local targets; mapfile -t targets < <(unit_targets)
  (( ${#targets[@]} > 0 )) || die "found no unit test targets in build/"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_BUILD_BENCH=OFF >/dev/null
  ninja -C build-asan -j "$(nproc)" "${targets[@]}"
  local want have; want="$(unit_test_count build)"; have="$(unit_test_count build-asan)"
  [[ "$want" == "$have" ]] || die "build-asan/ has $have unit tests, build/ has $want"
}

# run_tier LABEL BUILD_DIR: runs one ctest label and adds its counts to the totals.
run_tier() {
  local label="$1" dir="$2" out="$RESULTS/$1.log" rc=0
  log "tier $label"
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" -L "^${label}\$" --output-on-failure --no-tests=ignore \
    -j "$( [[ $label == unit ]] && nproc || echo 1)" ${CTEST_ARGS:-} 2>&1 | tee "$out" || rc=$?
  local line; line="$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -1 || true)"
  if [[ -n "$line" ]]; then
    local total failed
    total="$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")"
    failed="$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")"
    TOTAL_PASSED=$((TOTAL_PASSED + total - failed)); TOTAL_FAILED=$((TOTAL_FAILED + failed))
  fi
  if (( rc != 0 )); then FAILED_TIERS+=("$label"); fi
}

start_cluster() {
  log "starting local control plane '$CLUSTER'"
  eval "$(hack/cluster.sh up --name "$CLUSTER" --nodes 16 --gpus-per-node 8 --blocks 2 --racks-per-block 2)"
  export LOCKSTEP_CLUSTER_NAME="$CLUSTER"
}

stop_cluster() { hack/cluster.sh down --name "$CLUSTER" >/dev/null 2>&1 || true; }

main() {
  local started=$SECONDS
  hack/setup.sh
  # NCCL comes from the nvidia-nccl-cu13 wheel; with it installed, NCCL tests must run, not skip.
  LOCKSTEP_TEST_NCCL_LIBRARY="$(hack/setup-nccl.sh)"
  export LOCKSTEP_TEST_NCCL_LIBRARY LOCKSTEP_REQUIRE_NCCL=1
  mkdir -p "$RESULTS"
  log "building build/ (RelWithDebInfo)"
  configure_and_build build
  if want_tier unit; then
    log "building build-asan/ (ASan + UBSan) for unit tests"
    build_asan_unit
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      run_tier unit build-asan
  fi
  if want_tier integration || want_tier e2e; then
    trap stop_cluster EXIT
    start_cluster
  fi
  export LOCKSTEP_REPO_ROOT="$REPO_ROOT" LOCKSTEP_BUILD_DIR="$REPO_ROOT/build"
  # The image build test (docker/build-in-image.sh) builds in build-image/ next to build/: same
  # depth, so ccache's relative paths match and it reuses build/'s objects even in a fresh clone
  # (a mktemp dir missed the cache: minutes of compiling), and a rerun only relinks what changed.
  export LOCKSTEP_IMAGE_BUILD_DIR="${LOCKSTEP_IMAGE_BUILD_DIR:-$REPO_ROOT/build-image}"
  for tier in integration launcher e2e; do
    want_tier "$tier" && run_tier "$tier" build
  done
  local elapsed=$((SECONDS - started))
  echo "lockstep tests (${TIERS[*]}) in ${elapsed}s"
  echo "total: $TOTAL_PASSED passed, $TOTAL_FAILED failed"
  if (( ${#FAILED_TIERS[@]} > 0 || TOTAL_FAILED > 0 )); then
    echo "failed tiers: ${FAILED_TIERS[*]}" >&2
    exit 1
  fi
}
main
