#!/usr/bin/env bash
# Builds the local control plane's binaries from their Go modules (no prebuilt downloads exist
# here) into $LOCKSTEP_CACHE/tools/<tool>-<version>/ and links them into $LOCKSTEP_CACHE/tools/bin.
# A tool whose versioned directory is complete is not rebuilt, so a warm run takes a second.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

TOOLS_ROOT="$LOCKSTEP_CACHE/tools"
mkdir -p "$TOOLS_BIN"
export GOFLAGS="${GOFLAGS:--buildvcs=false} -trimpath"
export CGO_ENABLED=0

# k8s.io/kubernetes names its staging modules v0.0.0 with replace directives that a dependent
# module does not inherit, so the build module replaces each with the matching v0.Y.Z release.
build_kubernetes() {
  local dir="$TOOLS_ROOT/kubernetes-$K8S_VERSION"
  if [[ -x "$dir/kube-apiserver" && -x "$dir/kube-controller-manager" && -x "$dir/kubectl" ]]; then
    return 0
  fi
  log "building kube-apiserver, kube-controller-manager, kubectl $K8S_VERSION (slow the first time)"
  local work; work="$(mktemp -d)"
  local staging_version="v0.${K8S_VERSION#v1.}"
  (
    cd "$work"
    go mod init lockstep.local/k8s-tools >/dev/null 2>&1
    go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
    local gomod; gomod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
    {
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo "replace ("
      sed -n '/^replace (/,/^)/p' "$gomod" | grep -o 'k8s.io/[a-z0-9-]*' | sort -u |
        while read -r m; do echo "  $m => $m $staging_version"; done
      echo ")"
    } >>go.mod
    cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    # tidy only after tools.go exists: with no import it would drop the pinned requirement.
    go mod tidy
    grep -q "k8s.io/kubernetes $K8S_VERSION" go.mod || die "go mod tidy moved k8s.io/kubernetes off $K8S_VERSION"
    mkdir -p "$dir.partial"
    for cmd in kube-apiserver kube-controller-manager kubectl; do
      go build -o "$dir.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd"
    done
  )
  rm -rf "$dir" && mv "$dir.partial" "$dir" && rm -rf "$work"
}

# build_go_tool NAME VERSION PACKAGE: `go install PACKAGE@VERSION`, which builds with the module's
# own go.mod and go.sum, exactly as its authors pinned them.
build_go_tool() {
  local name="$1" version="$2" pkg="$3"
  local dir="$TOOLS_ROOT/$name-$version"
  [[ -x "$dir/$name" ]] && return 0
  log "building $name $version"
  rm -rf "$dir.partial" && mkdir -p "$dir.partial"
  GOBIN="$dir.partial" go install "$pkg@$version"
  local built; built="$(ls "$dir.partial")"
  [[ "$built" == "$name" ]] || mv "$dir.partial/$built" "$dir.partial/$name"
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

link_tools() {
  ln -sf "$TOOLS_ROOT/kubernetes-$K8S_VERSION/kube-apiserver" "$TOOLS_BIN/kube-apiserver"
  ln -sf "$TOOLS_ROOT/kubernetes-$K8S_VERSION/kube-controller-manager" "$TOOLS_BIN/kube-controller-manager"
  ln -sf "$TOOLS_ROOT/kubernetes-$K8S_VERSION/kubectl" "$TOOLS_BIN/kubectl"
  ln -sf "$TOOLS_ROOT/etcd-$ETCD_VERSION/etcd" "$TOOLS_BIN/etcd"
  ln -sf "$TOOLS_ROOT/kwok-$KWOK_VERSION/kwok" "$TOOLS_BIN/kwok"
  ln -sf "$TOOLS_ROOT/helm-$HELM_VERSION/helm" "$TOOLS_BIN/helm"
}

main() {
  command -v go >/dev/null || die "go is required to build the control plane tools"
  build_go_tool etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3
  build_go_tool kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
  build_go_tool helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
  build_kubernetes
  link_tools
  log "tools ready in $TOOLS_BIN"
}
main "$@"
