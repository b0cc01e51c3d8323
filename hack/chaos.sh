#!/usr/bin/env bash
# The chaos tier's long run (tests/chaos/, docs/reliability.md) on a local control plane of its
# own: SIGKILLs of the operator during 200 job creations, restarts, completions and deletions; a
# leader stopped for 30 s (fencing); scheduler leaders killed mid-bind in three rounds; the
# apiserver and etcd restarted under 50 jobs. hack/test.sh runs the same tests at a short scale.
#
#   hack/chaos.sh                 the long run
#   hack/chaos.sh --short         the short run, as hack/test.sh makes it
#   hack/chaos.sh --filter GLOB   only matching tests (gtest filter, e.g. '*Pause*')
#   hack/chaos.sh --repeat N      every selected test N times
#
# Environment: LOCKSTEP_CHAOS_CLUSTER (cluster name, default lockstep-chaos). The output is in
# build/test-results/chaos-run.log; the figures (lines "CHAOS-FIGURE ...") are printed at the end.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_ROOT"
source "$REPO_ROOT/hack/lib/build.sh"  # configure_and_build, ccache settings

SCALE=long FILTER='*' REPEAT=1
while (( $# > 0 )); do
  case "$1" in
    --short) SCALE=short; shift ;;
    --filter) FILTER="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat takes a positive number"
CLUSTER="${LOCKSTEP_CHAOS_CLUSTER:-lockstep-chaos}"
LOG="$REPO_ROOT/build/test-results/chaos-run.log"

main() {
  local started=$SECONDS rc=0
  hack/setup.sh
  log "building build/ (chaos tests and the operator)"
  configure_and_build build -- chaos_test lockstep-operator
  trap 'hack/cluster.sh down --name "$CLUSTER" >/dev/null 2>&1 || true' EXIT
  log "starting local control plane '$CLUSTER'"
  eval "$(hack/cluster.sh up --name "$CLUSTER" --nodes 16 --gpus-per-node 8 --blocks 2 --racks-per-block 2)"
  kubectl apply --server-side --force-conflicts -f crds/ >/dev/null
  export LOCKSTEP_CLUSTER_NAME="$CLUSTER"
  mkdir -p "$(dirname "$LOG")"
  log "chaos tests ($SCALE scale, filter '$FILTER', $REPEAT time(s)): $LOG"
  [[ "$SCALE" == long ]] && export LOCKSTEP_CHAOS=long
  build/tests/chaos_test --gtest_filter="$FILTER" --gtest_repeat="$REPEAT" 2>&1 | tee "$LOG" || rc=$?
  echo
  echo "chaos ($SCALE) in $((SECONDS - started)) s, exit $rc:"
  grep '^CHAOS-FIGURE ' "$LOG" | sed 's/^CHAOS-FIGURE /  /' || true
  return "$rc"
}
main
