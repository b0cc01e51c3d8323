#!/usr/bin/env bash
# Every cached tool lives in a directory named by the hash of its recipe (hack/lib/go-build.sh
# recipe_key). This test computes every tool's key as hack/build-tools.sh does (its own main,
# with `tool` replaced by a recorder), edits one recipe (a flag in its build function, as a
# developer would) and checks that exactly that tool's key changed; then that editing the helper
# the wrapper-module tools share changes theirs and no other. Nothing is built.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
command -v go >/dev/null || { echo "LOCKSTEP_TEST_SKIPPED: go not installed"; exit 0; }
export LOCKSTEP_CACHE; LOCKSTEP_CACHE="$(mktemp -d)"
trap 'rm -rf "$LOCKSTEP_CACHE"' EXIT
source "$REPO/hack/build-tools.sh"

source "$REPO/tests/unit/hack/recipe_key_recorder.sh"

main
(( ${#KEYS[@]} >= 4 )) || fail "found ${#KEYS[@]} tools in build-tools.sh: ${!KEYS[*]}"
for t in "${!KEYS[@]}"; do BEFORE[$t]="${KEYS[$t]}"; done
main
for t in "${!KEYS[@]}"; do [[ "${KEYS[$t]}" == "${BEFORE[$t]}" ]] || fail "$t's key is not stable"; done

# A flag in kwok's build function: kwok only.
expect_edit_rekeys build_kwok 's/go_install_build /GOFLAGS=-v go_install_build /' main

# The wrapper-module helper: every tool built through it (etcd, kubernetes), no other.
expect_edit_rekeys wrapper_module_build 's/go mod tidy || exit 1/go mod tidy -e || exit 1/' main

# Another version of one tool: that tool only.
ETCD_VERSION=v9.9.9 main
[[ "${KEYS[etcd]}" != "${BEFORE[etcd]}" ]] || fail "a new etcd version kept etcd's key"
for t in "${!KEYS[@]}"; do
  [[ "$t" == etcd || "${KEYS[$t]}" == "${BEFORE[$t]}" ]] || fail "a new etcd version changed $t's key"
done
echo "recipe keys: ${#KEYS[@]} tools (${!KEYS[*]}), each rebuilt only by its own recipe"
