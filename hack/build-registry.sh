#!/usr/bin/env bash
# Builds the CNCF distribution registry (the `registry` binary that serves Docker Hub's protocol,
# github.com/distribution/distribution/v3 cmd/registry) from its Go module into
# $LOCKSTEP_CACHE/tools/registry-<version>-<recipe hash>/ and links it into $LOCKSTEP_CACHE/tools/bin,
# as hack/build-tools.sh does for the control plane: a new recipe or version rebuilds it, a warm
# run takes a second. The local cluster's registry (hack/lib/cluster-registry.sh) runs it, and
# hack/release.sh pushes releases to it.
#
#   hack/build-registry.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO_ROOT/hack/lib/go-build.sh"

REGISTRY_VERSION="${REGISTRY_VERSION:-v3.1.2}"

# The module has no replace directives, so `go install M@V` builds it exactly as its authors
# pinned it (no wrapper module needed).
build_registry() {
  go_install_build "$1" registry github.com/distribution/distribution/v3/cmd/registry \
    "$REGISTRY_VERSION"
}

main() {
  command -v go >/dev/null || die "go is required to build the registry"
  tool registry "$REGISTRY_VERSION" build_registry go_install_build -- registry
}
# Sourced by tests for the recipe alone.
[[ "${BASH_SOURCE[0]}" != "$0" ]] || main "$@"
