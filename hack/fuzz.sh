#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser that reads untrusted bytes (tests/fuzz/<target>/):
# builds build-fuzz/ with clang (libFuzzer + ASan + UBSan, the whole tree instrumented; see
# cmake/LockstepFuzz.cmake), then runs each target for a bounded time starting from its checked-in
# corpus, and prints executions and findings per target. The unit tier (hack/test.sh) replays the
# checked-in corpora under ASan + UBSan on every run; this script looks for new inputs.
#
#   hack/fuzz.sh                         every target, 60 s each
#   hack/fuzz.sh --seconds 600 quantity  one target, longer
#   hack/fuzz.sh --jobs 2                two targets at a time
#   hack/fuzz.sh --merge                 afterwards, add the inputs that reached new coverage to
#                                        the checked-in corpora (libFuzzer -merge=1; review them)
#
# A finding (crash, leak, UBSan report, timeout, out-of-memory) is saved under
# build-fuzz/fuzz-work/<target>/findings/ and makes the script exit 1. Fix it with a unit test
# that reproduces it, then copy the input into tests/fuzz/<target>/corpus/ (docs/reliability.md).
# The summary is also written to build-fuzz/fuzz-work/summary.md.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_ROOT"
source "$REPO_ROOT/hack/lib/build.sh"  # configure_and_build, ccache settings

SECONDS_EACH=60 JOBS=1 MERGE=0 TARGETS=()
while (( $# > 0 )); do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --merge) MERGE=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    -*) die "unknown flag: $1" ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[[ "$SECONDS_EACH" =~ ^[0-9]+$ && "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--seconds and --jobs take numbers"

BUILD="$REPO_ROOT/build-fuzz"
WORK="$BUILD/fuzz-work"

all_targets() {
  local dir
  for dir in tests/fuzz/*/; do
    [[ -f "$dir/CMakeLists.txt" ]] && basename "$dir"
  done
}

# fuzz_one TARGET: runs the target's binary for SECONDS_EACH from its corpus; its log, new
# inputs and findings stay in $WORK/TARGET/.
fuzz_one() {
  local target="$1" dir="$WORK/$1"
  rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/findings"
  # New inputs go to the first directory (scratch); the checked-in corpus is only read.
  # -timeout: one input running 10 s is a finding (a hang); -rss_limit_mb: so is 2 GiB of memory.
  "$BUILD/tests/fuzz_$target" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$dir/findings/" \
    "$dir/corpus" "tests/fuzz/$target/corpus" >"$dir/fuzz.log" 2>&1 || true
  if (( MERGE )); then
    "$BUILD/tests/fuzz_$target" -merge=1 "tests/fuzz/$target/corpus" "$dir/corpus" \
      >"$dir/merge.log" 2>&1 || true
  fi
}

# summary_line TARGET: "| target | executions | exec/s | corpus | findings |" from its log.
summary_line() {
  local target="$1" dir="$WORK/$1" runs speed corpus findings
  runs="$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)$/\1/p' "$dir/fuzz.log" | tail -1)"
  speed="$(sed -nE 's/^stat::average_exec_per_sec: +([0-9]+)$/\1/p' "$dir/fuzz.log" | tail -1)"
  corpus="$(find "tests/fuzz/$target/corpus" "$dir/corpus" -type f | wc -l)"
  findings="$(find "$dir/findings" -type f | wc -l)"
  # A run that died before its final stats (a crash) printed none: that is a finding too.
  if [[ -z "$runs" ]]; then runs="?"; (( findings > 0 )) || findings="1 (see fuzz.log)"; fi
  printf '| %s | %s | %s | %s | %s |\n' "$target" "$runs" "${speed:-?}" "$corpus" "$findings"
}

main() {
  command -v clang++ >/dev/null || die "clang++ is required (hack/setup.sh installs it)"
  (( ${#TARGETS[@]} > 0 )) || mapfile -t TARGETS < <(all_targets)
  local t
  for t in "${TARGETS[@]}"; do
    [[ -f "tests/fuzz/$t/CMakeLists.txt" ]] || die "no fuzz target tests/fuzz/$t"
  done
  log "building build-fuzz/ (clang, libFuzzer + ASan + UBSan)"
  CC=clang CXX=clang++ configure_and_build "$BUILD" -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DLOCKSTEP_FUZZ=ON -DLOCKSTEP_BUILD_BENCH=OFF -- \
    "${TARGETS[@]/#/fuzz_}"
  mkdir -p "$WORK"
  log "fuzzing ${#TARGETS[@]} targets, ${SECONDS_EACH} s each, $JOBS at a time"
  local running=0
  for t in "${TARGETS[@]}"; do
    fuzz_one "$t" &
    running=$((running + 1))
    if (( running >= JOBS )); then wait -n; running=$((running - 1)); fi
  done
  wait
  local summary="$WORK/summary.md" failed=0
  {
    echo "hack/fuzz.sh --seconds $SECONDS_EACH ($(date -u +%Y-%m-%d), clang $(clang++ -dumpversion))"
    echo
    echo "| target | executions | exec/s | corpus (checked in + new) | findings |"
    echo "|---|---|---|---|---|"
    for t in "${TARGETS[@]}"; do summary_line "$t"; done
  } >"$summary"
  cat "$summary"
  for t in "${TARGETS[@]}"; do
    if [[ -n "$(find "$WORK/$t/findings" -type f)" ]] || ! grep -q '^stat::number_of_executed_units' "$WORK/$t/fuzz.log"; then
      echo "finding in $t: $WORK/$t/fuzz.log" >&2
      failed=1
    fi
  done
  return "$failed"
}
main
