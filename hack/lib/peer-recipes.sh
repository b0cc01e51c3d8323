# Recipes of the peers bench/peers runs beside Lockstep (sourced by hack/build-peers.sh; a test
# tier that needs one peer sources this file and calls the same peer_* function, so its recipe
# text, and with it its cache key, is the same and the peer is built once per machine).
#
# Each peer is pinned and built from its own Go module through the module proxy. None of these
# modules has replace directives, so `go install M@V` builds each exactly as its authors pinned
# it (go_install_build); kube-scheduler comes from k8s.io/kubernetes like the control plane and
# needs the wrapper module (wrapper_module_build + kubernetes_staging_replaces). Beside each
# binary the recipe copies the manifests users deploy from that same module version (CRDs, RBAC,
# webhook configurations, shipped configs and runtimes) into <artifact>/module/, so a run installs
# the CRDs and RBAC of exactly the code it runs.
# Needs hack/lib/common.sh and hack/lib/go-build.sh sourced first.
# shellcheck shell=bash

TRAINING_OPERATOR_VERSION="${TRAINING_OPERATOR_VERSION:-v1.8.1}"  # github.com/kubeflow/training-operator
KUEUE_VERSION="${KUEUE_VERSION:-v0.17.0}"                          # sigs.k8s.io/kueue
KUEUE_JOBSET_VERSION="${KUEUE_JOBSET_VERSION:-v0.11.1}"            # sigs.k8s.io/jobset, run with Kueue
TRAINER_VERSION="${TRAINER_VERSION:-v2.0.0}"                       # github.com/kubeflow/trainer/v2
TRAINER_JOBSET_VERSION="${TRAINER_JOBSET_VERSION:-v0.8.2}"         # the JobSet Trainer v2.0.0 requires
KUBERAY_VERSION="${KUBERAY_VERSION:-v1.5.0}"                       # github.com/ray-project/kuberay/ray-operator

# copy_module_files DIR MODULE VERSION PATH...: copies PATHs (files or folders, relative to the
# module's root) of MODULE@VERSION from the module cache into DIR/module/, keeping their paths.
copy_module_files() {
  local dir="$1" module="$2" version="$3"; shift 3
  local src; src="$(go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$src" ]] || { log "no module directory for $module@$version"; return 1; }
  local path
  for path in "$@"; do
    [[ -e "$src/$path" ]] || { log "$module@$version has no $path"; return 1; }
    mkdir -p "$dir/module/$(dirname "$path")"
    cp -r "$src/$path" "$dir/module/$path"
  done
  chmod -R u+w "$dir/module"
}

# go_install_with_files DIR NAME PACKAGE MODULE VERSION PATH...: the binary, then the manifests;
# a failed copy removes the artifact so it is never taken for complete.
go_install_with_files() {
  local dir="$1" name="$2" pkg="$3" module="$4" version="$5"; shift 5
  go_install_build "$dir" "$name" "$pkg" "$version" &&
    copy_module_files "$dir" "$module" "$version" "$@" || { rm -rf "$dir"; return 1; }
}

build_training_operator() {
  go_install_with_files "$1" training-operator \
    github.com/kubeflow/training-operator/cmd/training-operator.v1 \
    github.com/kubeflow/training-operator "$TRAINING_OPERATOR_VERSION" \
    manifests/base/crds manifests/base/rbac manifests/base/webhook
}

build_kueue() {
  go_install_with_files "$1" kueue sigs.k8s.io/kueue/cmd/kueue sigs.k8s.io/kueue "$KUEUE_VERSION" \
    config/components/crd/bases config/components/rbac config/components/webhook \
    config/components/manager/controller_manager_config.yaml
}

# build_jobset DIR VERSION: JobSet's controller is the module's root package. `go install
# sigs.k8s.io/jobset@V` fails here: it reads the module's version list for deprecations and the
# proxy answers 403 for that list, so JobSet is built in a wrapper module pinned to V.
build_jobset() {
  wrapper_module_build "$1" sigs.k8s.io/jobset "$2" - -- "jobset-$2=sigs.k8s.io/jobset" &&
    copy_module_files "$1" sigs.k8s.io/jobset "$2" \
      config/components/crd/bases config/components/rbac config/components/webhook \
      config/components/manager/controller_manager_config.yaml || { rm -rf "$1"; return 1; }
}
build_kueue_jobset() { build_jobset "$1" "$KUEUE_JOBSET_VERSION"; }
build_trainer_jobset() { build_jobset "$1" "$TRAINER_JOBSET_VERSION"; }

build_trainer() {
  go_install_with_files "$1" trainer-controller-manager \
    github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager \
    github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" \
    manifests/base/crds manifests/base/rbac manifests/base/webhook manifests/base/runtimes
}

build_kuberay() {
  go_install_with_files "$1" kuberay-operator github.com/ray-project/kuberay/ray-operator \
    github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION" config/crd/bases config/rbac
}

# kube-scheduler (default profile) from the same k8s.io/kubernetes release as the control plane.
build_kube_scheduler() {
  wrapper_module_build "$1" k8s.io/kubernetes "$K8S_VERSION" kubernetes_staging_replaces -- \
    kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
}

# peer_built BIN: the artifact BIN links to is really there. A failed `go install` inside a
# recipe's && chain does not stop the recipe (errexit is off there), which would leave a
# directory without its binary and a dangling link; that directory is removed and the build
# fails here, so the next run builds it again. (Outside the recipes: editing a recipe's helper
# would change every key built with it.)
peer_built() {
  [[ -x "$TOOLS_BIN/$1" ]] && return 0
  local dir; dir="$(dirname "$(readlink "$TOOLS_BIN/$1")")"
  [[ "$dir" == "$TOOLS_ROOT"/* ]] && rm -rf "$dir"
  rm -f "$TOOLS_BIN/$1"
  die "building $1 failed (no binary in $dir); see the go output above"
}

# One function per peer, called by hack/build-peers.sh and by any script that needs that peer:
# `tool` keys the artifact on the recipe's text, the helpers' text and the version.
peer_training_operator() {
  tool training-operator "$TRAINING_OPERATOR_VERSION" build_training_operator \
    go_install_with_files go_install_build copy_module_files -- training-operator
  peer_built training-operator
}
peer_kueue() {
  tool kueue "$KUEUE_VERSION" build_kueue go_install_with_files go_install_build \
    copy_module_files -- kueue
  peer_built kueue
}
peer_kueue_jobset() {
  tool jobset "$KUEUE_JOBSET_VERSION" build_kueue_jobset build_jobset wrapper_module_build \
    copy_module_files -- "jobset-$KUEUE_JOBSET_VERSION"
  peer_built "jobset-$KUEUE_JOBSET_VERSION"
}
peer_trainer_jobset() {
  tool jobset "$TRAINER_JOBSET_VERSION" build_trainer_jobset build_jobset wrapper_module_build \
    copy_module_files -- "jobset-$TRAINER_JOBSET_VERSION"
  peer_built "jobset-$TRAINER_JOBSET_VERSION"
}
peer_trainer() {
  tool trainer "$TRAINER_VERSION" build_trainer go_install_with_files go_install_build \
    copy_module_files -- trainer-controller-manager
  peer_built trainer-controller-manager
}
peer_kuberay() {
  tool kuberay "$KUBERAY_VERSION" build_kuberay go_install_with_files go_install_build \
    copy_module_files -- kuberay-operator
  peer_built kuberay-operator
}
peer_kube_scheduler() {
  tool kube-scheduler "$K8S_VERSION" build_kube_scheduler kubernetes_staging_replaces \
    wrapper_module_build -- kube-scheduler
  peer_built kube-scheduler
}

# Every peer, in the order bench/peers needs them.
PEERS=(kube_scheduler training_operator kueue_jobset kueue trainer_jobset trainer kuberay)
