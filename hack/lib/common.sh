# Shared helpers for hack/ scripts. Progress goes to stderr so stdout stays machine-readable.
# shellcheck shell=bash
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=hack/lib/versions.sh
source "$REPO_ROOT/hack/lib/versions.sh"
TOOLS_BIN="$LOCKSTEP_CACHE/tools/bin"

# with_heartbeat WHAT COMMAND...: runs COMMAND, printing "still WHAT (N s)" every 30 s so a
# minutes-long build never looks hung, then "WHAT: N s".
with_heartbeat() {
  local what="$1"; shift
  local started=$SECONDS
  "$@" &
  local pid=$! rc=0
  while kill -0 "$pid" 2>/dev/null; do
    local waited=0
    while (( waited < 30 )) && kill -0 "$pid" 2>/dev/null; do sleep 1; waited=$((waited + 1)); done
    kill -0 "$pid" 2>/dev/null && log "  still $what ($((SECONDS - started)) s)"
  done
  wait "$pid" || rc=$?
  (( rc == 0 )) && log "  $what: $((SECONDS - started)) s"
  return "$rc"
}

# timed_step NAME COMMAND...: runs one named step of a script, logging its name first and its
# elapsed time last; with LOCKSTEP_STEP_TIMES set, also appends "NAME<TAB>SECONDS" to that file
# (the cold-path check's summary reads it).
timed_step() {
  local name="$1"; shift
  local started=$SECONDS rc=0
  log "== $name"
  # In the background and waited for: a function run as `f || rc=$?` would run with errexit off.
  "$@" &
  wait "$!" || rc=$?
  log "== $name: $((SECONDS - started)) s$( ((rc == 0)) || echo " (failed, exit $rc)")"
  [[ -z "${LOCKSTEP_STEP_TIMES:-}" ]] || printf '%s\t%s\n' "$name" "$((SECONDS - started))" \
    >>"$LOCKSTEP_STEP_TIMES"
  return "$rc"
}
