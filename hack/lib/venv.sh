# Shared venvs: each lives in $LOCKSTEP_CACHE/venvs/<name>, named by a hash of its recipe, and a
# clone links it (hack/setup-venv.sh: .venv, hack/setup-venv-horovod.sh: .venv-horovod).
#
# Concurrency: clones may build the same venv at the same moment. A venv cannot be built in a
# temp dir and renamed into place, because pip writes the venv's absolute path into every console
# script's shebang (torchrun, ray, ...). Instead it is built at its final path while holding
# <name>.lock (flock), and the marker file .lockstep-complete is written last: a venv without the
# marker is a build that died half-way, and the next holder of the lock deletes and rebuilds it.
# Nobody links a venv before its marker exists.
# shellcheck shell=bash

VENVS="$LOCKSTEP_CACHE/venvs"
PIP_CACHE="$LOCKSTEP_CACHE/pip"
VENV_COMPLETE_MARKER=".lockstep-complete"

# venv_pip VENV ARGS...: pip install into VENV with the shared pip cache.
venv_pip() {
  local venv="$1"; shift
  "$venv/bin/python" -m pip install --cache-dir "$PIP_CACHE" --disable-pip-version-check \
    --progress-bar off "$@"
}

# venv_hash TEXT...: the 16-hex-digit name of a venv whose recipe is stdin, plus Python and the
# machine (a venv is never moved between them).
venv_hash() {
  { cat; python3 -c 'import sys; print(sys.version.split()[0])'; uname -m; } |
    sha256sum | cut -c1-16
}

# venv_ensure VENV INSTALL_FN WHAT: builds VENV with INSTALL_FN (called with VENV) unless a
# complete one exists, under VENV's lock, printing "still WHAT" every 30 s. A complete venv is
# never modified, so that check needs no lock (and a warm run costs no heartbeat).
venv_ensure() {
  local venv="$1" install="$2" what="$3"
  [[ -f "$venv/$VENV_COMPLETE_MARKER" ]] && return 0
  mkdir -p "$VENVS" "$PIP_CACHE"
  with_heartbeat "$what" venv_build_locked "$venv" "$install"
}

venv_build_locked() {
  local venv="$1" install="$2"
  (
    exec 9>"$venv.lock"
    flock 9
    [[ -f "$venv/$VENV_COMPLETE_MARKER" ]] && exit 0
    if [[ -e "$venv" ]]; then
      log "removing $venv: an earlier build of it did not finish"
      rm -rf "$venv"
    fi
    log "creating $venv"
    python3 -m venv "$venv"
    "$install" "$venv"
    date -u +%FT%TZ >"$venv/$VENV_COMPLETE_MARKER"
  )
}

# venv_link VENV LINK: points LINK at VENV; a new symlink renamed over the old one, so LINK never
# dangles.
venv_link() {
  local venv="$1" link="$2"
  [[ "$(readlink "$link" 2>/dev/null || true)" == "$venv" ]] && return 0
  ln -sfn "$venv" "$link.tmp.$$"
  mv -T "$link.tmp.$$" "$link"
  log "linked $link -> $venv"
}
