# The cold-path check (hack/setup.sh --cold): what a new user meets on a fresh machine, without
# giving up this one. A copy of this working tree (tracked files and untracked ones git does not
# ignore) runs hack/setup.sh, then hack/demo.sh, then (with --with-tests) hack/test.sh, with
# every cache the project reads pointed at an empty scratch directory: LOCKSTEP_CACHE (tools,
# venvs, ccache, pip), GOMODCACHE, GOCACHE, PIP_CACHE_DIR and XDG_CACHE_HOME. Debian packages are
# the machine's (they cannot be uninstalled for a check). A summary of each step's time ends it.
#
#   --with-tests   also run hack/test.sh in the copy after the demo
#   --keep         keep the scratch directory (~20 GB) instead of removing it at the end
#   LOCKSTEP_COLD_DIR=DIR   the scratch directory (default: a new /tmp/lockstep-cold.XXXXXX)
# shellcheck shell=bash

cold_check() {
  local with_tests=0 keep=0 arg
  for arg in "$@"; do
    case "$arg" in
      --with-tests) with_tests=1 ;;
      --keep) keep=1 ;;
      *) die "unknown option $arg (hack/setup.sh --cold [--with-tests] [--keep])" ;;
    esac
  done
  local scratch="${LOCKSTEP_COLD_DIR:-$(mktemp -d /tmp/lockstep-cold.XXXXXX)}"
  mkdir -p "$scratch"
  [[ -z "$(ls -A "$scratch")" ]] || die "$scratch is not empty: the check needs empty caches"
  local clone="$scratch/lockstep" times="$scratch/step-times.tsv"
  copy_working_tree "$clone"
  log "cold check in $scratch (caches empty; clone of this working tree in $clone)"
  local name; name="cold$(printf '%s' "$scratch" | md5sum | cut -c1-6)"
  local rc=0
  (
    cd "$clone"
    export LOCKSTEP_CACHE="$scratch/cache" GOMODCACHE="$scratch/gomod" GOCACHE="$scratch/gocache"
    export PIP_CACHE_DIR="$scratch/pip" XDG_CACHE_HOME="$scratch/xdg"
    export LOCKSTEP_STEP_TIMES="$times" LOCKSTEP_DEMO_CLUSTER="$name-demo"
    export LOCKSTEP_TEST_CLUSTER="$name-test" LOCKSTEP_DEMO_METRICS_PORT=38090
    # Each step ends the check when it fails: errexit is off in a subshell run as `(...) || rc=$?`.
    timed_step "hack/setup.sh (cold)" hack/setup.sh || exit
    timed_step "hack/demo.sh" hack/demo.sh || exit
    timed_step "hack/cluster.sh down (demo)" hack/cluster.sh down --name "$name-demo" || exit
    if (( with_tests )); then timed_step "hack/test.sh" hack/test.sh || exit; fi
  ) || rc=$?
  echo
  echo "cold check ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)):"
  awk -F'\t' '{ printf "  %-34s %6d s  (%d min %02d s)\n", $1, $2, $2 / 60, $2 % 60 }' "$times"
  if (( keep )); then
    echo "kept $scratch"
  else
    hack_cluster_down_quietly "$clone" "$name"
    rm -rf "$scratch"
  fi
  (( rc == 0 )) || die "the cold check failed (exit $rc)"
}

# copy_working_tree DEST: this working tree as a user's clone of it would have it, uncommitted
# edits included, without build outputs or links into the caches (.venv).
copy_working_tree() {
  local dest="$1"
  mkdir -p "$dest"
  (cd "$REPO_ROOT" && git ls-files -z --cached --others --exclude-standard |
    tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$dest"
  git -C "$dest" init -q && git -C "$dest" add -A && \
    git -C "$dest" -c user.name=cold -c user.email=cold@localhost commit -qm "cold check copy"
}

# A failed demo or test run can leave a cluster up; its processes would outlive the scratch dir.
hack_cluster_down_quietly() {
  local clone="$1" name="$2" cluster
  for cluster in "$name-demo" "$name-test"; do
    LOCKSTEP_CACHE="$(dirname "$clone")/cache" "$clone/hack/cluster.sh" down --name "$cluster" \
      >/dev/null 2>&1 || true
  done
}
