# Building Go programs into $LOCKSTEP_CACHE/tools (sourced by hack/build-tools.sh and
# hack/build-peers.sh).
#
# Every artifact lives in a directory named by its recipe's hash (recipe_key): the text of the
# shell functions that build it, the versions they read, the Go toolchain and its flags. So an
# edited recipe makes a new directory (and is rebuilt), an untouched one is found in well under a
# second, and an artifact some other recipe made is never taken for this one's. A build happens in
# <dir>.partial and is renamed into place only when complete.
# shellcheck shell=bash

TOOLS_ROOT="$LOCKSTEP_CACHE/tools"
# Idempotent, so a script that sources this file twice computes the same keys.
GOFLAGS="${GOFLAGS:--buildvcs=false}"
[[ " $GOFLAGS " == *" -trimpath "* ]] || GOFLAGS+=" -trimpath"
export GOFLAGS CGO_ENABLED=0

# recipe_key FUNCTION... -- VALUE...: 12 hex digits over the functions' text and the values.
recipe_key() {
  local fns=() values=()
  while (( $# > 0 )) && [[ "$1" != "--" ]]; do fns+=("$1"); shift; done
  (( $# > 0 )) && shift
  values=("$@")
  {
    declare -f "${fns[@]}"
    printf '%s\n' "${values[@]}"
    go version
    echo "GOFLAGS=$GOFLAGS CGO_ENABLED=$CGO_ENABLED"
  } | sha256sum | cut -c1-12
}

# wrapper_module_build DIR MODULE VERSION EXTRA_GOMOD_FN -- NAME=PACKAGE...
# Builds PACKAGEs of MODULE@VERSION inside a throwaway module that requires it, so the module's
# own replace directives (which `go install M@V` refuses) do not matter: its dependencies are
# resolved by `go mod tidy` from the pinned requirement, and the pin is checked after tidy.
# EXTRA_GOMOD_FN (or "-") appends lines to the wrapper's go.mod (replaces, extra pins) before tidy.
wrapper_module_build() {
  local dir="$1" module="$2" version="$3" extra="$4"; shift 4
  [[ "$1" == "--" ]] && shift
  local work; work="$(mktemp -d)"
  # Every step checks its own exit: errexit is off inside a subshell run as `( ... ) || ...`,
  # and a failed build must never be renamed into place.
  (
    cd "$work" || exit 1
    go mod init lockstep.local/wrapper >/dev/null 2>&1 || exit 1
    echo "require $module $version" >>go.mod
    if [[ "$extra" != "-" ]]; then "$extra" "$module" "$version" >>go.mod || exit 1; fi
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      local spec
      for spec in "$@"; do printf '\t_ "%s"\n' "${spec#*=}"; done
      printf ')\n'
    } >tools.go
    # tidy only after tools.go exists: with no import it would drop the pinned requirement.
    go mod tidy || exit 1
    grep -qE "^[[:space:]]*(require )?$module $version( |$)" go.mod ||
      die "go mod tidy moved $module off $version"
    rm -rf "$dir.partial" && mkdir -p "$dir.partial" || exit 1
    for spec in "$@"; do go build -o "$dir.partial/${spec%%=*}" "${spec#*=}" || exit 1; done
  ) || { rm -rf "$work" "$dir.partial"; return 1; }
  rm -rf "$dir" && mv "$dir.partial" "$dir" && rm -rf "$work"
}

# k8s.io/kubernetes names its staging modules v0.0.0 with replace directives that a dependent
# module does not inherit, so the wrapper replaces each with the matching v0.Y.Z release.
kubernetes_staging_replaces() {
  local module="$1" version="$2"
  go mod download -json "$module@$version" >/dev/null
  local gomod; gomod="$(go env GOMODCACHE)/cache/download/$module/@v/$version.mod"
  echo "replace ("
  sed -n '/^replace (/,/^)/p' "$gomod" | grep -o 'k8s.io/[a-z0-9-]*' | sort -u |
    while read -r m; do echo "  $m => $m v0.${version#v1.}"; done
  echo ")"
}

# go_install_build DIR NAME PACKAGE VERSION: `go install PACKAGE@VERSION`, which builds with the
# module's own go.mod and go.sum exactly as its authors pinned them (refused when that go.mod has
# replace directives: use wrapper_module_build).
go_install_build() {
  local dir="$1" name="$2" pkg="$3" version="$4"
  rm -rf "$dir.partial" && mkdir -p "$dir.partial" || return 1
  GOBIN="$dir.partial" go install "$pkg@$version" || { rm -rf "$dir.partial"; return 1; }
  local built; built="$(ls "$dir.partial")"
  [[ -n "$built" ]] || { rm -rf "$dir.partial"; return 1; }
  [[ "$built" == "$name" ]] || mv "$dir.partial/$built" "$dir.partial/$name" || return 1
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

# tool_dir NAME VERSION KEY: where that recipe's artifact lives.
tool_dir() { echo "$TOOLS_ROOT/$1-$2-$3"; }

# link_tool DIR BIN...: points $TOOLS_BIN/BIN at DIR/BIN.
link_tool() {
  local dir="$1" bin; shift
  mkdir -p "$TOOLS_BIN"
  for bin in "$@"; do ln -sfn "$dir/$bin" "$TOOLS_BIN/$bin"; done
}

# tool NAME VERSION RECIPE_FN HELPER_FN... -- BIN...: builds unless that recipe's directory exists.
tool() {
  local name="$1" version="$2" recipe="$3"; shift 3
  local helpers=()
  while [[ "$1" != "--" ]]; do helpers+=("$1"); shift; done
  shift
  local key; key="$(recipe_key "$recipe" "${helpers[@]}" -- "$name" "$version")"
  local dir; dir="$(tool_dir "$name" "$version" "$key")"
  if ! tool_complete "$dir" "$@"; then
    # Clones share the cache: one builds under the lock, the others wait for it and find it done.
    mkdir -p "$TOOLS_ROOT"
    exec 8>"$dir.lock"
    flock 8
    if ! tool_complete "$dir" "$@"; then
      log "building $name $version (recipe $key; minutes the first time)"
      with_heartbeat "building $name" "$recipe" "$dir"
    fi
    exec 8>&-
  fi
  link_tool "$dir" "$@"
}

# tool_complete DIR BIN...: every BIN is built in DIR.
tool_complete() {
  local dir="$1" bin; shift
  for bin in "$@"; do [[ -x "$dir/$bin" ]] || return 1; done
}
