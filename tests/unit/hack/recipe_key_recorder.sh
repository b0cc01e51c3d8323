# Sourced by the recipe-key tests: `tool` (hack/lib/go-build.sh) replaced by a recorder of each
# tool's key (KEYS) and the functions that make it (RECIPES), keyed by the tool's name, or by its
# first binary with RECORD_BY_BIN=1 (two versions of one tool); expect_changed and
# expect_edit_rekeys.
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
# expect_edit_rekeys FN SED_EXPR RUN...: edits function FN with SED_EXPR, runs RUN (which calls
# `tool` for every tool again), checks with expect_changed that only FN's tools got new keys, and
# puts FN back.
expect_edit_rekeys() {
  local fn="$1" expr="$2"; shift 2
  local original; original="$(declare -f "$fn")"
  eval "$(sed "$expr" <<<"$original")"
  [[ "$(declare -f "$fn")" != "$original" ]] || fail "the test's edit of $fn did not apply"
  "$@"
  expect_changed "$fn"
  eval "$original"
}
