# The Lockstep CRDs handed to a Helm release (sourced by hack/demo.sh and the Helm integration
# tests). Test suites and earlier demos install the CRD with `kubectl apply`; Helm refuses to own
# an object another tool created unless it carries the release's ownership metadata.
# shellcheck shell=bash

# The CRDs the chart installs (helm/lockstep/files/crds/): each one a suite or an earlier demo
# applied with kubectl must be adopted, or Helm refuses the whole install.
LOCKSTEP_CRDS=(trainingjobs.lockstep.dev clustertrainingtemplates.lockstep.dev
               trainingtemplates.lockstep.dev)

# adopt_crd RELEASE NAMESPACE: give the existing Lockstep CRDs to release RELEASE in NAMESPACE,
# exactly as a user adopting an existing install would. A CRD not there: nothing to do for it.
adopt_crd() {
  local release="$1" ns="$2" crd
  for crd in "${LOCKSTEP_CRDS[@]}"; do
    kubectl get crd "$crd" >/dev/null 2>&1 || continue
    kubectl label crd "$crd" app.kubernetes.io/managed-by=Helm --overwrite >/dev/null
    kubectl annotate crd "$crd" --overwrite >/dev/null \
      meta.helm.sh/release-name="$release" meta.helm.sh/release-namespace="$ns"
  done
}
