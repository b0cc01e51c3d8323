#!/usr/bin/env bash
# Builds the local control plane's binaries from their Go modules (no prebuilt downloads exist
# here) into $LOCKSTEP_CACHE/tools/<tool>-<version>-<recipe hash>/ and links them into
# $LOCKSTEP_CACHE/tools/bin. The hash covers each tool's build function (hack/lib/go-build.sh), so
# editing one recipe rebuilds that tool only; a warm run takes a second.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$REPO_ROOT/hack/lib/go-build.sh"
source "$REPO_ROOT/hack/lib/peer-recipes.sh"  # build_kube_scheduler

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

# The real nodes of `hack/cluster.sh up --kubelet-nodes N` (hack/lib/cluster-kubelet.sh): kubelet
# and kube-proxy from the control plane's release, built apart from it so that the apiserver's
# recipe (and cache key) stays as it was; on the Go build cache the apiserver's build leaves, only
# ~100 more packages compile (41 s on 2 cores).
build_kubernetes_node() {
  GOFLAGS="$GOFLAGS -ldflags=-X=k8s.io/component-base/version.gitVersion=$K8S_VERSION" \
    wrapper_module_build "$1" k8s.io/kubernetes "$K8S_VERSION" kubernetes_staging_replaces -- \
    kubelet=k8s.io/kubernetes/cmd/kubelet kube-proxy=k8s.io/kubernetes/cmd/kube-proxy
}

# Cluster DNS for kubelet nodes: CoreDNS's main with only the plugins the cluster's Corefile uses
# (hack/kubelet/coredns-main.go), in a module that requires CoreDNS at its version, so that its
# dependencies resolve to the versions CoreDNS's own go.mod pins.
build_coredns() {
  local dir="$1" work; work="$(mktemp -d)"
  (
    cd "$work" || exit 1
    go mod init lockstep.local/coredns >/dev/null 2>&1 || exit 1
    cp "$REPO_ROOT/hack/kubelet/coredns-main.go" main.go || exit 1
    echo "require github.com/coredns/coredns $COREDNS_VERSION" >>go.mod
    go mod tidy || exit 1
    grep -qE "^[[:space:]]*(require )?github.com/coredns/coredns $COREDNS_VERSION( |$)" go.mod ||
      die "go mod tidy moved coredns off $COREDNS_VERSION"
    rm -rf "$dir.partial" && mkdir -p "$dir.partial" && go build -o "$dir.partial/coredns" . || exit 1
  ) || { rm -rf "$work" "$dir.partial"; return 1; }
  rm -rf "$dir" && mv "$dir.partial" "$dir" && rm -rf "$work"
}

# The NetworkPolicy enforcer of kubelet nodes: the one kind ships, built from its own module and
# go.sum, with one change (hack/kubelet/kube-network-policies-xt-nfqueue.go says why): its
# nftables `queue` statements become the xtables NFQUEUE target, which these kernels have.
build_kube_network_policies() {
  local dir="$1" src work
  src="$(go mod download -json "sigs.k8s.io/kube-network-policies@$KUBE_NETWORK_POLICIES_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$src/pkg/networkpolicy" ]] || return 1
  work="$(mktemp -d)"
  cp -r "$src/." "$work/" && chmod -R u+w "$work" || return 1
  (
    cd "$work/pkg/networkpolicy" || exit 1
    perl -0pi -e 's/queue := &expr\.Queue\{Num: uint16\(c\.config\.QueueID\)\}\n\tif c\.config\.FailOpen \{\n\t\tqueue\.Flag = expr\.QueueFlagBypass\n\t\}/queue := nfqueueExpr(uint16(c.config.QueueID), c.config.FailOpen)/g' controller.go &&
    perl -pi -e 's/&expr\.Queue\{Num: uint16\(n\.nfQueueID\), Flag: expr\.QueueFlagBypass\}/nfqueueExpr(uint16(n.nfQueueID), true)/' dnsagent.go || exit 1
    # Every queue statement replaced, or the build stops: a new release must be looked at again.
    ! grep -n 'expr\.Queue{' ./*.go || exit 1
    cp "$REPO_ROOT/hack/kubelet/kube-network-policies-xt-nfqueue.go" . || exit 1
    cd "$work" && rm -rf "$dir.partial" && mkdir -p "$dir.partial" &&
      go build -o "$dir.partial/kube-network-policies" ./cmd
  ) || { rm -rf "$work" "$dir.partial"; return 1; }
  rm -rf "$work" "$dir" && mv "$dir.partial" "$dir"
}

build_kwok() { go_install_build "$1" kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"; }
# helm's default Kubernetes version (for `helm template` and lint without a cluster) is v1.20
# unless stamped, and the chart's kubeVersion (>= 1.34) refuses that: stamp the control plane's.
build_helm() {
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  GOFLAGS="$GOFLAGS -ldflags=-X=helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor" \
    go_install_build "$1" helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
}

main() {
  command -v go >/dev/null || die "go is required to build the control plane tools"
  local started=$SECONDS
  tool etcd "$ETCD_VERSION" build_etcd wrapper_module_build -- etcd
  tool kwok "$KWOK_VERSION" build_kwok go_install_build -- kwok
  tool helm "$HELM_VERSION" build_helm go_install_build -- helm
  tool kubernetes "$K8S_VERSION" build_kubernetes kubernetes_staging_replaces \
    wrapper_module_build -- kube-apiserver kube-controller-manager kubectl
  tool kubernetes-node "$K8S_VERSION" build_kubernetes_node kubernetes_staging_replaces \
    wrapper_module_build -- kubelet kube-proxy
  # kube-scheduler places every pod of a kubelet cluster that Lockstep does not (the chart's, the
  # cluster DNS test's); the same recipe and key as bench/peers' (peer_kube_scheduler), so it is
  # built once.
  tool kube-scheduler "$K8S_VERSION" build_kube_scheduler kubernetes_staging_replaces \
    wrapper_module_build -- kube-scheduler
  tool coredns "$COREDNS_VERSION-$(sha256sum "$REPO_ROOT/hack/kubelet/coredns-main.go" | cut -c1-8)" \
    build_coredns -- coredns
  # The version names the patch's content too, so editing it rebuilds.
  tool kube-network-policies "$KUBE_NETWORK_POLICIES_VERSION-xtq$(sha256sum \
    "$REPO_ROOT/hack/kubelet/kube-network-policies-xt-nfqueue.go" | cut -c1-8)" \
    build_kube_network_policies -- kube-network-policies
  log "tools ready in $TOOLS_BIN ($((SECONDS - started)) s)"
}
# Sourced by tests/unit/hack/recipe_keys_test.sh for the recipes alone.
[[ "${BASH_SOURCE[0]}" != "$0" ]] || main "$@"
