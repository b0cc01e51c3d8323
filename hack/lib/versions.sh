# Versions of the tools the local control plane is built from. The build cache is keyed by these,
# so bumping one rebuilds only that tool.
# shellcheck shell=bash
K8S_VERSION="${K8S_VERSION:-v1.34.4}"       # kube-apiserver, kube-controller-manager, kubectl
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"     # go.etcd.io/etcd/server/v3 (k8s 1.34 wants etcd >= 3.5)
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"      # sigs.k8s.io/kwok
HELM_VERSION="${HELM_VERSION:-v3.19.5}"     # helm.sh/helm/v3
KUBE_NETWORK_POLICIES_VERSION="${KUBE_NETWORK_POLICIES_VERSION:-v0.8.0}"  # sigs.k8s.io/kube-network-policies
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.4}"  # github.com/coredns/coredns: cluster DNS of kubelet nodes
LOCKSTEP_CACHE="${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}"
