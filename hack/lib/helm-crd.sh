# The TrainingJob CRD handed to a Helm release (sourced by hack/demo.sh and the Helm integration
# tests). Test suites and earlier demos install the CRD with `kubectl apply`; Helm refuses to own
# an object another tool created unless it carries the release's ownership metadata.
# shellcheck shell=bash

# adopt_crd RELEASE NAMESPACE: give an existing CRD to release RELEASE in NAMESPACE, exactly as a
# user adopting an existing install would. No CRD: nothing to do.
adopt_crd() {
  local release="$1" ns="$2" crd=trainingjobs.lockstep.dev
  kubectl get crd "$crd" >/dev/null 2>&1 || return 0
  kubectl label crd "$crd" app.kubernetes.io/managed-by=Helm --overwrite >/dev/null
  kubectl annotate crd "$crd" --overwrite >/dev/null \
    meta.helm.sh/release-name="$release" meta.helm.sh/release-namespace="$ns"
}
