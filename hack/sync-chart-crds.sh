#!/usr/bin/env bash
# Copies the TrainingJob CRD from crds/ (the source of truth) into the Helm chart, which renders
# it from helm/lockstep/files/crds/. Run after every change to crds/; the unit test
# helm_chart_unit_test (tests/unit/helm) fails while the copies differ.
#
#   hack/sync-chart-crds.sh           copy
#   hack/sync-chart-crds.sh --check   exit 1 (and say which file) if the chart's copy is stale
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$REPO_ROOT/crds"
DST="$REPO_ROOT/helm/lockstep/files/crds"

check=false
case "${1:-}" in
  --check) check=true ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

stale=0
mkdir -p "$DST"
for src in "$SRC"/*.yaml; do
  dst="$DST/$(basename "$src")"
  if cmp -s "$src" "$dst"; then continue; fi
  if $check; then
    echo "stale: $dst differs from $src (run hack/sync-chart-crds.sh)" >&2
    stale=1
  else
    cp "$src" "$dst"
    echo "synced $dst" >&2
  fi
done
# A CRD removed from crds/ must leave the chart too.
for dst in "$DST"/*.yaml; do
  [[ -e "$dst" ]] || continue
  [[ -e "$SRC/$(basename "$dst")" ]] && continue
  if $check; then echo "stale: $dst has no source in crds/" >&2; stale=1
  else rm "$dst"; echo "removed $dst" >&2; fi
done
exit "$stale"
