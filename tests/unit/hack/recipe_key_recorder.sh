# Sourced by the recipe-key tests: `tool` (hack/lib/go-build.sh) replaced by a recorder of each
# tool's key (KEYS) and the functions that make it (RECIPES), keyed by the tool's name, or by its
# first binary with RECORD_BY_BIN=1 (two versions of one tool); and expect_changed.
# shellcheck shell=bash
declare -A KEYS RECIPES BEFORE
tool() {
  local name="$1" version="$2" recipe="$3"; shift 3
  local helpers=()
  while [[ "$1" != "--" ]]; do helpers+=("$1"); shift; done
  shift
  local id="$name"; [[ -z "${RECORD_BY_BIN:-}" ]] || id="$1"
  KEYS[$id]="$(recipe_key "$recipe" "${helpers[@]}" -- "$name" "$version")"
  RECIPES[$id]="$recipe ${helpers[*]}"
}
log() { :; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_changed FN_CHANGED: each tool whose recipe or helpers name FN_CHANGED has a new key,
# every other tool the key it had in BEFORE.
expect_changed() {
  local t
  for t in "${!KEYS[@]}"; do
    if [[ " ${RECIPES[$t]} " == *" $1 "* ]]; then
      [[ "${KEYS[$t]}" != "${BEFORE[$t]}" ]] || fail "editing $1 did not change $t's key"
    else
      [[ "${KEYS[$t]}" == "${BEFORE[$t]}" ]] || fail "editing $1 changed $t's key"
    fi
  done
}
