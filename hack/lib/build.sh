# Building Lockstep's C++ tree (sourced by hack/test.sh and hack/demo.sh).
# shellcheck shell=bash

export CCACHE_DIR="$LOCKSTEP_CACHE/ccache" CCACHE_BASEDIR="$REPO_ROOT" CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE=5G

# ninja_condensed DIR TARGET...: ninja with its progress condensed to a line every 10% or 30 s
# ("building build/: 120/301 (39%), 95 s"); compiler errors and warnings are printed whole.
ninja_condensed() {
  local dir="$1"; shift
  local started=$SECONDS last_print=$SECONDS last_decile=-1 line done_ total rc
  set +o pipefail
  ninja -C "$dir" -j "$(nproc)" "$@" 2>&1 | {
    while IFS= read -r line; do
      if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
        done_="${BASH_REMATCH[1]}" total="${BASH_REMATCH[2]}"
        local decile=$((done_ * 10 / total))
        if (( decile > last_decile || SECONDS - last_print >= 30 )); then
          log "  building $dir: $done_/$total ($((done_ * 100 / total))%), $((SECONDS - started)) s"
          last_decile=$decile last_print=$SECONDS
        fi
      elif [[ "$line" != "ninja: Entering directory"* && "$line" != "ninja: no work to do." ]]; then
        printf '%s\n' "$line" >&2
      fi
    done
  }
  rc="${PIPESTATUS[0]}"
  set -o pipefail
  (( rc == 0 )) && log "  built $dir in $((SECONDS - started)) s"
  return "$rc"
}

# configure_build_dir DIR [CMAKE_ARGS...]: configures DIR (RelWithDebInfo, ccache), builds nothing.
configure_build_dir() {
  local dir="$1"; shift
  cmake -S "$REPO_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache "$@" >/dev/null
}

# configure_and_build DIR [CMAKE_ARGS...] [-- TARGET...]: configures DIR and builds TARGETs
# (everything when none is named).
configure_and_build() {
  local dir="$1"; shift
  local cmake_args=() targets=()
  while (( $# > 0 )) && [[ "$1" != "--" ]]; do cmake_args+=("$1"); shift; done
  (( $# > 0 )) && shift
  targets=("$@")
  configure_build_dir "$dir" "${cmake_args[@]}"
  ninja_condensed "$dir" "${targets[@]}"
}
