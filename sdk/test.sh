#!/usr/bin/env bash
# The sdk tier: Lockstep's Python SDK, its kubectl plugin and the Kubeflow converter (sdk/).
#
#   sdk/test.sh          everything: needs $KUBECONFIG of a local cluster (hack/cluster.sh up),
#                        root, build/ (operator, launcher, test node agent) and .venv
#   sdk/test.sh unit     the unit tests and type check only (no cluster)
#
# 1. A venv of the SDK's pinned dependencies and pytest (sdk/python/requirements-test.txt),
#    shared between clones in $LOCKSTEP_CACHE/venvs/sdk-<key>, <key> hashing the requirements
#    and this recipe (hack/lib/venv.sh, as hack/setup-venv.sh keys .venv); made here when
#    missing, so a fresh machine needs nothing else.
# 2. The package is built as a wheel and installed into a scratch directory, with its
#    `kubectl-lockstep` console script; every test below imports that installed copy, not the
#    source tree (LOCKSTEP_SDK_INSTALLED=1).
# 3. mypy --strict on the package; pytest: sdk/python/tests (pure logic over a fake of the
#    kubernetes client's APIs), then tests/sdk (the converter on training-operator v1.8.1's
#    examples with the apiserver's dry-run; the SDK end to end on agent nodes).
#
# Prints ctest's summary line ("N% tests passed, F tests failed out of T") for hack/test.sh.
set -euo pipefail
source "$(dirname "$0")/../hack/lib/common.sh"
source "$REPO_ROOT/hack/lib/venv.sh"
cd "$REPO_ROOT"

MODE="${1:-all}"
[[ "$MODE" == all || "$MODE" == unit ]] || die "usage: sdk/test.sh [all|unit]"
REQS="$REPO_ROOT/sdk/python/requirements-test.txt"

install_sdk_deps() { venv_pip "$1" -r "$REQS"; }

sdk_venv() {
  local key
  key="$({ cat "$REQS"; declare -f install_sdk_deps venv_pip; } | venv_hash)"
  venv_ensure "$VENVS/sdk-$key" install_sdk_deps "installing the sdk tier's venv" >&2
  echo "$VENVS/sdk-$key"
}

main() {
  local started=$SECONDS venv
  venv="$(sdk_venv)"
  SCRATCH="$(mktemp -d /tmp/lockstep-sdk-test.XXXXXX)"
  trap 'rm -rf "$SCRATCH"' EXIT
  log "sdk: building the wheel and installing it into $SCRATCH/site"
  # From a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
  cp -r "$REPO_ROOT/sdk/python" "$SCRATCH/source"
  rm -rf "$SCRATCH/source/build" "$SCRATCH/source/src/"*.egg-info
  "$venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation --disable-pip-version-check \
    -w "$SCRATCH/wheel" "$SCRATCH/source" >"$SCRATCH/build.log" 2>&1 ||
    { cat "$SCRATCH/build.log" >&2; die "the wheel did not build"; }
  "$venv/bin/python" -m pip install --quiet --no-deps --disable-pip-version-check \
    --target "$SCRATCH/site" "$SCRATCH"/wheel/lockstep-*.whl
  [[ -x "$SCRATCH/site/bin/kubectl-lockstep" ]] || die "the wheel installs no kubectl-lockstep"
  export PYTHONPATH="$SCRATCH/site" LOCKSTEP_SDK_INSTALLED=1 PATH="$SCRATCH/site/bin:$PATH"
  # kubectl finds the plugin on PATH by its name.
  kubectl lockstep --help >/dev/null || die "kubectl does not run the kubectl-lockstep plugin"

  local rc=0 mypy_rc=0
  log "sdk: mypy --strict"
  (cd sdk/python && "$venv/bin/python" -m mypy --cache-dir "$SCRATCH/mypy" src) || mypy_rc=1
  local suites=(sdk/python/tests)
  if [[ "$MODE" == all ]]; then
    suites+=(tests/sdk)
    export LOCKSTEP_SDK_REQUIRE_E2E=1
  fi
  log "sdk: pytest ${suites[*]}"
  "$venv/bin/python" -m pytest -p no:cacheprovider -rfEs --durations=5 --rootdir "$REPO_ROOT" \
    --junitxml "$SCRATCH/junit.xml" -o junit_family=xunit1 "${suites[@]}" || rc=1
  summary "$SCRATCH/junit.xml" "$mypy_rc"
  log "sdk: $((SECONDS - started)) s"
  (( rc == 0 && mypy_rc == 0 ))
}

# summary JUNIT RC: ctest's summary line (mypy counts as one test), which hack/test.sh counts.
summary() {
  python3 - "$1" "$2" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print("0% tests passed, 1 tests failed out of 1 (pytest wrote no results)")
    sys.exit(0)
suites = [root] if root.tag == "testsuite" else list(root)
total = sum(int(s.get("tests", 0)) for s in suites) + 1
failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
skipped = sum(int(s.get("skipped", 0)) for s in suites)
failed += sys.argv[2] != "0"  # mypy
print(f"{100 * (total - failed) // total}% tests passed, {failed} tests failed out of {total}"
      + (f" ({skipped} skipped)" if skipped else ""))
EOF
}

main "$@"
