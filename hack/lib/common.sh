# Shared helpers for hack/ scripts. Progress goes to stderr so stdout stays machine-readable.
# shellcheck shell=bash
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=hack/lib/versions.sh
source "$REPO_ROOT/hack/lib/versions.sh"
TOOLS_BIN="$LOCKSTEP_CACHE/tools/bin"
