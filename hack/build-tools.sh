#!/usr/bin/env bash
# Builds the local control plane's binaries from their Go modules (no prebuilt downloads exist
# here) into $LOCKSTEP_CACHE/tools/<tool>-<version>-<recipe hash>/ and links them into
# $LOCKSTEP_CACHE/tools/bin. The hash covers each tool's build function (hack/lib/go-build.sh), so
# editing one recipe rebuilds that tool only; a warm run takes a second.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO_ROOT/hack/lib/go-build.sh"

# The version is stamped as Kubernetes' own release build does: a plain `go build` leaves
# v0.0.0-master+$Format:%H$ on the apiserver's /version, which is no semantic version, and
# clients that parse it (Kueue, hack/lib/cluster-kueue.sh) exit.
build_kubernetes() {
  GOFLAGS="$GOFLAGS -ldflags=-X=k8s.io/component-base/version.gitVersion=$K8S_VERSION" \
    wrapper_module_build "$1" k8s.io/kubernetes "$K8S_VERSION" kubernetes_staging_replaces -- \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
    kubectl=k8s.io/kubernetes/cmd/kubectl
}

# etcd's server module has replace directives (../api, ../pkg, ...), so `go install` refuses it.
build_etcd() {
  wrapper_module_build "$1" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" - -- \
    etcd=go.etcd.io/etcd/server/v3
}

build_kwok() { go_install_build "$1" kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"; }
build_helm() { go_install_build "$1" helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"; }

main() {
  command -v go >/dev/null || die "go is required to build the control plane tools"
  local started=$SECONDS
  tool etcd "$ETCD_VERSION" build_etcd wrapper_module_build -- etcd
  tool kwok "$KWOK_VERSION" build_kwok go_install_build -- kwok
  tool helm "$HELM_VERSION" build_helm go_install_build -- helm
  tool kubernetes "$K8S_VERSION" build_kubernetes kubernetes_staging_replaces \
    wrapper_module_build -- kube-apiserver kube-controller-manager kubectl
  log "tools ready in $TOOLS_BIN ($((SECONDS - started)) s)"
}
# Sourced by tests/unit/hack/recipe_keys_test.sh for the recipes alone.
[[ "${BASH_SOURCE[0]}" != "$0" ]] || main "$@"
