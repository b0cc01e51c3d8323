#!/usr/bin/env bash
# Runs every test tier of Lockstep from a fresh clone on a fresh machine:
#   setup (hack/setup.sh) -> build (build/) -> local control plane up -> build-asan/ (ASan+UBSan)
#   -> unit (sanitized) -> integration (ctest -j) beside launcher -> measure -> chaos -> e2e
#   -> kubelet (real nodes, a cluster of its own) beside sdk -> summary.
#
#   hack/test.sh                 everything
#   hack/test.sh unit            only some tiers (unit integration launcher measure chaos e2e kubelet sdk)
#
# Environment: LOCKSTEP_CACHE (tool/pip/ccache/venv caches, default ~/.cache/lockstep),
# LOCKSTEP_TEST_CLUSTER (cluster name, default lockstep-test), CTEST_ARGS (extra ctest flags),
# LOCKSTEP_INTEGRATION_JOBS (ctest -j of the integration tier, default 4; 1 = all serial),
# LOCKSTEP_E2E_JOBS (ctest -j of the e2e tier, default 4: its framework entries count 2 each),
# LOCKSTEP_TEST_OVERLAP (1, the default: the launcher tier runs beside the integration tier, and
# the kubelet tier beside the sdk tier; 0: one tier after the other). Each tier's output is in
# build/test-results/<tier>.log.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_ROOT"

TIERS=("$@")
(( ${#TIERS[@]} > 0 )) || TIERS=(unit integration launcher measure chaos e2e kubelet sdk)
CLUSTER="${LOCKSTEP_TEST_CLUSTER:-lockstep-test}"
RESULTS="$REPO_ROOT/build/test-results"
INTEGRATION_JOBS="${LOCKSTEP_INTEGRATION_JOBS:-4}"
E2E_JOBS="${LOCKSTEP_E2E_JOBS:-4}"
OVERLAP="${LOCKSTEP_TEST_OVERLAP:-1}"
TOTAL_PASSED=0 TOTAL_FAILED=0 FAILED_TIERS=() TIER_LINES=() BACKGROUND_PID=""

want_tier() { local t; for t in "${TIERS[@]}"; do [[ "$t" == "$1" ]] && return 0; done; return 1; }

source "$REPO_ROOT/hack/lib/build.sh"  # configure_and_build, ccache settings

# build_targets: what build/ compiles for the tiers: every directory's `all` except tests/unit,
# tests/launcher/unit and tests/fuzz, whose tests run in the unit tier from build-asan/ only.
# Compiling those ~100 test files a second time at -O2 -g ran nothing and cost a cold run minutes.
# tests/launcher is taken by its subfolders so that its unit/ can be left out. (`ninja -C build`
# still builds everything for a developer.)
build_targets() {
  grep -oE '^build [^ :]+/all:' build/build.ninja | sed -E 's/^build //; s/:$//' |
    awk -F/ '(NF == 2 && $1 != "tests") ||
             (NF == 3 && $1 == "tests" && $2 != "unit" && $2 != "fuzz" && $2 != "launcher") ||
             (NF == 4 && $1 == "tests" && $2 == "launcher" && $3 != "unit")'
}

# check_tier_executables DIR LABEL...: every test of these tiers in DIR finds its executable, so
# a test whose binary was left unbuilt fails here, by name, not as a "not found" in a tier.
check_tier_executables() {
  local dir="$1" label missing; shift
  for label in "$@"; do
    missing="$(ctest --test-dir "$dir" -L "^${label}\$" --show-only=json-v1 | python3 -c '
import json, os, sys
print("\n".join(t["name"] + ": " + t["command"][0] for t in json.load(sys.stdin)["tests"]
                if t.get("command") and not os.path.exists(t["command"][0])))')"
    [[ -z "$missing" ]] || die "tier $label: executables not built in $dir:"$'\n'"$missing"
  done
}

# build_asan_unit: build-asan/ with only the unit tier's binaries (target lockstep_unit_tests:
# every lockstep_test(... LABEL unit)), not every integration, launcher and e2e binary.
build_asan_unit() {
  # -O1 -g1 (line tables) as the sanitizers' own docs advise: reports keep file:line, and the
  # build costs a third of -O2 -g's CPU (tests/unit/api/codec_test.cc: 43 s instead of 126 s),
  # the longest step of a cold run. Test files build at -O0 (tests/CMakeLists.txt says why).
  configure_and_build build-asan -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    -- lockstep_unit_tests
  check_tier_executables build-asan unit
  log "build-asan/: $(ctest --test-dir build-asan -L '^unit$' -N | sed -nE 's/^Total Tests: //p')" \
    "unit test entries (a binary or a script each)"
}

# tier_jobs LABEL: ctest -j for a tier. Unit tests are pure logic: every core. Integration tests
# mostly wait on timers and the apiserver; the ones that share something cluster-wide carry
# RUN_SERIAL or a RESOURCE_LOCK (cmake/LockstepTesting.cmake), so ctest overlaps only the rest.
# Launcher tests run real frameworks on every core: one at a time. The e2e tier's framework
# binaries isolate themselves (tests/e2e/frameworks/CMakeLists.txt) and spend much of a job
# waiting (startup, rendezvous, polling), so they run side by side, two at a time (each counts 2
# PROCESSORS); its other tests are RUN_SERIAL.
tier_jobs() {
  case "$1" in
    unit) nproc ;;
    integration) echo "$INTEGRATION_JOBS" ;;
    e2e) echo "$E2E_JOBS" ;;
    *) echo 1 ;;
  esac
}

# run_ctest LABEL BUILD_DIR [quiet]: runs one ctest label into $RESULTS/LABEL.log (and to stdout
# unless quiet, for a tier running in the background) and leaves its exit status in
# $RESULTS/LABEL.rc and its wall time in $RESULTS/LABEL.seconds. Changes no shell variable, so
# it can run in a background subshell.
run_ctest() {
  local label="$1" dir="$2" quiet="${3:-}" out="$RESULTS/$1.log" rc=0 started=$SECONDS
  rm -f "$RESULTS/$label.rc" "$RESULTS/$label.seconds"
  # shellcheck disable=SC2086
  if [[ -n "$quiet" ]]; then
    ctest --test-dir "$dir" -L "^${label}\$" --output-on-failure --no-tests=ignore \
      -j "$(tier_jobs "$label")" ${CTEST_ARGS:-} >"$out" 2>&1 || rc=$?
  else
    ctest --test-dir "$dir" -L "^${label}\$" --output-on-failure --no-tests=ignore \
      -j "$(tier_jobs "$label")" ${CTEST_ARGS:-} 2>&1 | tee "$out" || rc=$?
  fi
  echo "$rc" >"$RESULTS/$label.rc"
  echo "$((SECONDS - started))" >"$RESULTS/$label.seconds"
}

# count_tier LABEL: adds the counts of a finished tier (its log and .rc) to the totals.
count_tier() {
  local label="$1" out="$RESULTS/$1.log" rc seconds passed=0 failed=0
  rc="$(cat "$RESULTS/$label.rc" 2>/dev/null || echo 1)"
  seconds="$(cat "$RESULTS/$label.seconds" 2>/dev/null || echo '?')"
  local line; line="$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -1 || true)"
  if [[ -n "$line" ]]; then
    local total
    total="$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")"
    failed="$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")"
    passed=$((total - failed))
    TOTAL_PASSED=$((TOTAL_PASSED + passed)); TOTAL_FAILED=$((TOTAL_FAILED + failed))
  fi
  if (( rc != 0 )); then FAILED_TIERS+=("$label"); fi
  TIER_LINES+=("$(printf '%-12s %4d passed, %d failed in %ss (%s)' \
    "$label" "$passed" "$failed" "$seconds" "$out")")
}

# run_tier LABEL BUILD_DIR: one tier in the foreground.
run_tier() {
  log "tier $1 (ctest -j $(tier_jobs "$1"))"
  run_ctest "$1" "$2"
  count_tier "$1"
}

# run_integration_and_launcher: the integration tier in the foreground and the launcher tier in
# the background beside it (LOCKSTEP_TEST_OVERLAP=1): the launcher's processes talk on loopback
# and never touch the cluster, and most integration tests wait on timers. The launcher's output
# goes to its log only and is printed whole once both are done, so the two never interleave.
run_integration_and_launcher() {
  if [[ "$OVERLAP" != 1 ]] || ! want_tier integration || ! want_tier launcher; then
    local tier
    for tier in integration launcher; do
      want_tier "$tier" && run_tier "$tier" build
    done
    return 0
  fi
  log "tier launcher (ctest -j 1) in the background beside integration: $RESULTS/launcher.log"
  run_ctest launcher build quiet &
  BACKGROUND_PID=$!
  run_tier integration build
  wait "$BACKGROUND_PID" || true
  BACKGROUND_PID=""
  log "tier launcher (ran beside integration)"
  cat "$RESULTS/launcher.log"
  count_tier launcher
}

# stop_background: on an early exit, a launcher tier still running beside integration is stopped:
# its ctest (the background subshell's child) and the subshell, by process id.
stop_background() {
  [[ -n "$BACKGROUND_PID" ]] || return 0
  pkill -TERM -P "$BACKGROUND_PID" 2>/dev/null || true
  kill "$BACKGROUND_PID" 2>/dev/null || true
}

# run_sdk_tier: the Python SDK, kubectl plugin and Kubeflow converter (sdk/test.sh, pytest: its
# own venv, unit tests, converted training-operator examples on the apiserver, e2e on agent nodes).
run_sdk_tier() {
  log "tier sdk (sdk/test.sh)"
  local started=$SECONDS rc=0
  sdk/test.sh 2>&1 | tee "$RESULTS/sdk.log" || rc=$?
  echo "$rc" >"$RESULTS/sdk.rc"
  echo "$((SECONDS - started))" >"$RESULTS/sdk.seconds"
  count_tier sdk
}

# run_kubelet_and_sdk: the sdk tier in the foreground and the kubelet tier in the background
# beside it (LOCKSTEP_TEST_OVERLAP=1). The kubelet tier runs a cluster of its own, so the two share
# only the cores; the sdk tier's waits are generous (30 s for jobs of a few seconds), and much of
# the kubelet tier's time is containerd and kubelets starting, pulling and waiting. Both passed
# side by side at a load of 15-20 (kubelet 483 s, sdk 768 s, on a machine shared by six builds).
run_kubelet_and_sdk() {
  if [[ "$OVERLAP" != 1 ]] || ! want_tier kubelet || ! want_tier sdk; then
    want_tier kubelet && run_tier kubelet build
    want_tier sdk && run_sdk_tier
    return 0
  fi
  log "tier kubelet (ctest -j 1) in the background beside sdk: $RESULTS/kubelet.log"
  run_ctest kubelet build quiet &
  BACKGROUND_PID=$!
  run_sdk_tier
  wait "$BACKGROUND_PID" || true
  BACKGROUND_PID=""
  log "tier kubelet (ran beside sdk)"
  cat "$RESULTS/kubelet.log"
  count_tier kubelet
}

start_cluster() {
  log "starting local control plane '$CLUSTER'"
  # Kueue runs beside it when setup built it (hack/build-peers.sh kueue); its tests skip if not.
  local kueue=()
  if [[ -x "$TOOLS_BIN/kueue" ]]; then
    kueue=(--with-kueue)
    log "Kueue runs in '$CLUSTER' (hack/cluster.sh up --with-kueue)"
  else
    log "Kueue does not run in '$CLUSTER' (not built: hack/build-peers.sh kueue); its tests skip"
  fi
  eval "$(hack/cluster.sh up --name "$CLUSTER" --nodes 16 --gpus-per-node 8 --blocks 2 \
    --racks-per-block 2 "${kueue[@]}")"
  export LOCKSTEP_CLUSTER_NAME="$CLUSTER"
  # The CRD now, as the tests would (same server-side apply), so that kube-controller-manager's
  # garbage collector has found TrainingJobs by the time the integration tier starts: it looks
  # for new resources only every 30 s, and a test whose pods wait for it to collect them waited
  # that long on a cluster whose CRD was installed a moment before.
  kubectl apply --server-side --force-conflicts -f crds/ >/dev/null
}

stop_cluster() { hack/cluster.sh down --name "$CLUSTER" >/dev/null 2>&1 || true; }

main() {
  local started=$SECONDS
  hack/setup.sh
  # NCCL comes from the nvidia-nccl-cu13 wheel; with it installed, NCCL tests must run, not skip.
  LOCKSTEP_TEST_NCCL_LIBRARY="$(hack/setup-nccl.sh)"
  export LOCKSTEP_TEST_NCCL_LIBRARY LOCKSTEP_REQUIRE_NCCL=1
  mkdir -p "$RESULTS"
  log "building build/ (RelWithDebInfo; the unit tier builds in build-asan/)"
  configure_build_dir build
  local targets; mapfile -t targets < <(build_targets)
  (( ${#targets[@]} > 0 )) || die "found no directory targets in build/build.ninja"
  ninja_condensed build "${targets[@]}"
  local tier tiers=()
  for tier in integration launcher measure chaos e2e; do want_tier "$tier" && tiers+=("$tier"); done
  check_tier_executables build "${tiers[@]}"
  if want_tier integration || want_tier measure || want_tier chaos || want_tier e2e ||
     want_tier sdk; then
    trap 'stop_background; stop_cluster' EXIT
    start_cluster
  fi
  if want_tier unit; then
    log "building build-asan/ (ASan + UBSan) for unit tests"
    build_asan_unit
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      run_tier unit build-asan
  fi
  export LOCKSTEP_REPO_ROOT="$REPO_ROOT" LOCKSTEP_BUILD_DIR="$REPO_ROOT/build"
  # The image build test (docker/build-in-image.sh) builds in build-image/ next to build/: same
  # depth, so ccache's relative paths match and it reuses build/'s objects even in a fresh clone
  # (a mktemp dir missed the cache: minutes of compiling), and a rerun only relinks what changed.
  export LOCKSTEP_IMAGE_BUILD_DIR="${LOCKSTEP_IMAGE_BUILD_DIR:-$REPO_ROOT/build-image}"
  run_integration_and_launcher
  # Measurements alone on the machine: nothing else's load in their figures.
  want_tier measure && run_tier measure build
  # Chaos alone too: it restarts the apiserver and etcd under everyone (short scale; the long
  # run is hack/chaos.sh; docs/reliability.md).
  want_tier chaos && run_tier chaos build
  want_tier e2e && run_tier e2e build
  # Real kubelet nodes in a cluster of the tier's own (tests/kubelet), after the timing-bound agent
  # tiers, whose cores its containers and images would otherwise share; the sdk tier beside it.
  run_kubelet_and_sdk
  local elapsed=$((SECONDS - started))
  echo "lockstep tests (${TIERS[*]}) in ${elapsed}s"
  printf '  %s\n' "${TIER_LINES[@]}"
  echo "total: $TOTAL_PASSED passed, $TOTAL_FAILED failed"
  if (( ${#FAILED_TIERS[@]} > 0 || TOTAL_FAILED > 0 )); then
    echo "failed tiers: ${FAILED_TIERS[*]}" >&2
    exit 1
  fi
}
main
