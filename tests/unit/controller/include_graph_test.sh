#!/usr/bin/env bash
# The operator's layering, checked on the source (issue 20): operator/ includes nothing from
# launcher/ (what both binaries share is protocol/), and no include cycle runs among the
# controller's files, a file's header and source counting as one module (a policy includes no
# plan step that includes it back). A cycle prints its modules. Nothing is built.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }

if found="$(grep -rn '#include "launcher/' "$REPO/operator")"; then
  fail "operator/ includes launcher/ (use protocol/):"$'\n'"$found"
fi

# Edges "including-module included-module" between controller modules, for tsort.
edges="$(
  cd "$REPO/operator/controller"
  for f in *.h *.cc; do
    from="${f%.*}"
    sed -n 's|^#include "operator/controller/\([a-z_]*\)\.h".*|\1|p' "$f" |
      while read -r to; do
        if [[ "$to" != "$from" ]]; then echo "$from $to"; fi
      done
  done
)"
[[ -n "$edges" ]] || fail "no includes found under operator/controller"
if ! order="$(tsort <<<"$edges" 2>&1)"; then
  fail "include cycle among operator/controller modules:"$'\n'"$(grep 'tsort' <<<"$order")"
fi
echo "ok: $(wc -l <<<"$edges") include edges among operator/controller modules, no cycle"
