#!/usr/bin/env bash
# The peers' cache keys (hack/lib/peer-recipes.sh, built by hack/build-peers.sh): every peer has
# its own key, stable across runs; editing one peer's build function changes that peer's key
# only; editing the shared helper changes every peer built through it; and a script that sources
# the recipes on its own (as a test tier running Kueue will) computes the same key for Kueue as
# build-peers.sh, so the peer is built once per machine. Nothing is built.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
command -v go >/dev/null || { echo "LOCKSTEP_TEST_SKIPPED: go not installed"; exit 0; }
export LOCKSTEP_CACHE; LOCKSTEP_CACHE="$(mktemp -d)"
trap 'rm -rf "$LOCKSTEP_CACHE"' EXIT
source "$REPO/hack/build-peers.sh"

RECORD_BY_BIN=1
source "$REPO/tests/unit/hack/recipe_key_recorder.sh"
peer_built() { :; }  # nothing is built here
all() { local p; for p in "${PEERS[@]}"; do "peer_$p"; done; }

all
(( ${#KEYS[@]} == ${#PEERS[@]} )) || fail "${#KEYS[@]} keys for ${#PEERS[@]} peers: ${!KEYS[*]}"
[[ "$(printf '%s\n' "${KEYS[@]}" | sort -u | wc -l)" == "${#PEERS[@]}" ]] || fail "two peers share a key"
for t in "${!KEYS[@]}"; do BEFORE[$t]="${KEYS[$t]}"; done
all
for t in "${!KEYS[@]}"; do [[ "${KEYS[$t]}" == "${BEFORE[$t]}" ]] || fail "$t's key is not stable"; done

expect_edit_rekeys build_kueue 's/go_install_with_files /GOFLAGS=-v go_install_with_files /' all
expect_edit_rekeys copy_module_files 's/cp -r /cp -rL /' all

# Another script (its own environment) sourcing only the libraries and calling peer_kueue gets
# the same key.
other="$(env -u GOFLAGS bash -c "source '$REPO/hack/lib/common.sh'; source '$REPO/hack/lib/go-build.sh'
  source '$REPO/hack/lib/peer-recipes.sh'
  tool() { local n=\$1 v=\$2 r=\$3; shift 3; local h=(); while [[ \$1 != -- ]]; do h+=(\"\$1\"); shift; done
           recipe_key \"\$r\" \"\${h[@]}\" -- \"\$n\" \"\$v\"; }
  peer_built() { :; }
  peer_kueue")"
[[ "$other" == "${BEFORE[kueue]}" ]] || fail "kueue's key differs outside build-peers.sh: $other"
echo "peer recipe keys: ${#KEYS[@]} peers (${!KEYS[*]}), each rebuilt only by its own recipe"
