#!/usr/bin/env bash
# The chart against the local control plane: `helm lint` is clean and the schema rejects a wrong
# type; `helm install` creates every object (the operator's pods stay Pending: there is no
# kube-scheduler and kwok nodes run nothing; that is expected); the ServiceAccount holds exactly
# the grants the operator needs; namespace editors (the built-in `edit` role) create TrainingJobs
# and viewers only read them; `helm upgrade` to a chart whose CRD has a new field applies it;
# `helm uninstall` removes the operator but keeps the CRD and users' TrainingJobs.
set -euo pipefail
# shellcheck source=tests/integration/helm/lib.sh
source "$(dirname "$0")/lib.sh"
require_tools

NS="lockstep-system-$SUFFIX"
JOBS_NS="lockstep-helm-jobs-$SUFFIX"
RELEASE="ls-it-$RANDOM"
FULLNAME="$RELEASE-lockstep"
SA="system:serviceaccount:$NS:$FULLNAME"
WORK="$(mktemp -d)"

cleanup() {
  helm uninstall "$RELEASE" -n "$NS" >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" "$JOBS_NS" --wait=false >/dev/null 2>&1 || true
  restore_crd
  rm -rf "$WORK"
}
trap cleanup EXIT

lint() {
  helm lint --strict "$CHART" >"$WORK/lint.out" 2>&1 || { cat "$WORK/lint.out"; fail "helm lint"; }
  ok "helm lint --strict clean"
  if helm lint "$CHART" --set replicaCount=two >"$WORK/lint.bad" 2>&1; then
    fail "helm lint accepted replicaCount=two"
  fi
  grep -q "replicaCount" "$WORK/lint.bad" || fail "schema error does not name the field"
  if helm install "$RELEASE" "$CHART" -n "$NS" --dry-run=server --set crds.install=yes \
       >"$WORK/install.bad" 2>&1; then
    fail "helm install accepted crds.install=yes"
  fi
  grep -q "crds" "$WORK/install.bad" || fail "install's schema error does not name the field: $(cat "$WORK/install.bad")"
  ok "schema rejects wrong value types (lint and install)"
  helm template "$RELEASE" "$CHART" -n "$NS" --kube-version "$K8S_VERSION" >"$WORK/rendered.yaml" ||
    fail "helm template"
  ok "helm template renders $(grep -c '^kind:' "$WORK/rendered.yaml") objects"
}

install() {
  adopt_crd "$RELEASE" "$NS"
  helm install "$RELEASE" "$CHART" -n "$NS" --create-namespace >"$WORK/install.out" 2>&1 ||
    { cat "$WORK/install.out"; fail "helm install"; }
  grep -q "Lockstep" "$WORK/install.out" || fail "NOTES.txt not printed"
  local kind name
  while read -r kind name; do
    kubectl get "$kind" "$name" -n "$NS" >/dev/null 2>&1 || fail "$kind/$name not created"
  done <<OBJECTS
serviceaccount $FULLNAME
clusterrole $FULLNAME
clusterrolebinding $FULLNAME
role $FULLNAME-leader-election
deployment $FULLNAME
poddisruptionbudget $FULLNAME
service $FULLNAME-metrics
configmap $FULLNAME-dashboard
crd $CRD_NAME
OBJECTS
  kubectl get role "$FULLNAME-node-leases" -n kube-node-lease >/dev/null ||
    fail "node-lease Role not created"
  wait_for 60 crd_established || fail "CRD not Established"
  local policy
  policy="$(kubectl get crd "$CRD_NAME" \
              -o jsonpath='{.metadata.annotations.helm\.sh/resource-policy}')"
  [[ "$policy" == keep ]] || fail "CRD lacks helm.sh/resource-policy: keep"
  # The ReplicaSet admitted both pods: the hardened pod spec passes the API server's validation.
  pods_created() {
    [[ "$(kubectl get pods -n "$NS" -l app.kubernetes.io/instance="$RELEASE" --no-headers \
          2>/dev/null | wc -l)" -eq 2 ]]
  }
  wait_for 60 pods_created || fail "the Deployment's 2 pods were not created"
  ok "helm install created every object; CRD Established; 2 operator pods admitted (Pending)"
}

# can_i VERB RESOURCE[/SUBRESOURCE] NAMESPACE: "yes" or "no" for the operator's ServiceAccount.
# (kubectl reads RESOURCE/NAME in its argument, so a subresource goes in --subresource.)
can_i() {
  local resource="${2%%/*}" sub=()
  [[ "$2" == */* ]] && sub=(--subresource "${2#*/}")
  kubectl auth can-i "$1" "$resource" "${sub[@]}" -n "$3" --as "$SA" 2>/dev/null || true
}

rbac() {
  local verb resource ns want got bad=0
  # Granted: what the operator does (docs/install.md lists the code path of each).
  # Denied: near misses a looser chart would grant.
  while read -r want verb resource ns; do
    [[ -z "$want" || "$want" == \#* ]] && continue
    ns="${ns//@NS/$NS}"; ns="${ns//@JOBS/$JOBS_NS}"
    got="$(can_i "$verb" "$resource" "$ns")"
    if [[ "$got" != "$want" ]]; then
      echo "  $verb $resource in $ns: want $want, got $got" >&2; bad=1
    fi
  done <<'GRANTS'
yes get trainingjobs.lockstep.dev @JOBS
yes list trainingjobs.lockstep.dev @JOBS
yes watch trainingjobs.lockstep.dev @JOBS
yes delete trainingjobs.lockstep.dev @JOBS
yes get trainingjobs.lockstep.dev/status @JOBS
yes patch trainingjobs.lockstep.dev/status @JOBS
yes update trainingjobs.lockstep.dev/finalizers @JOBS
yes list pods @JOBS
yes watch pods @JOBS
yes create pods @JOBS
yes delete pods @JOBS
yes create pods/binding @JOBS
yes patch pods/status @JOBS
yes watch services @JOBS
yes create services @JOBS
yes get secrets @JOBS
yes create secrets @JOBS
yes create events @JOBS
yes watch networkpolicies.networking.k8s.io @JOBS
yes create networkpolicies.networking.k8s.io @JOBS
yes watch endpointslices.discovery.k8s.io @JOBS
yes create endpointslices.discovery.k8s.io @JOBS
yes patch endpointslices.discovery.k8s.io @JOBS
yes list nodes @JOBS
yes watch priorityclasses.scheduling.k8s.io @JOBS
yes watch persistentvolumeclaims @JOBS
yes patch persistentvolumeclaims @JOBS
yes patch persistentvolumes @JOBS
yes watch storageclasses.storage.k8s.io @JOBS
yes watch leases.coordination.k8s.io kube-node-lease
yes create leases.coordination.k8s.io @NS
no create trainingjobs.lockstep.dev @JOBS
no update trainingjobs.lockstep.dev @JOBS
no update trainingjobs.lockstep.dev/status @JOBS
no patch trainingjobs.lockstep.dev/scale @JOBS
no update pods @JOBS
no patch pods @JOBS
no update pods/status @JOBS
no create pods/exec @JOBS
no create pods/eviction @JOBS
no list secrets @JOBS
no watch secrets @JOBS
no update secrets @JOBS
no delete secrets @JOBS
no get configmaps @JOBS
no patch events @JOBS
no update networkpolicies.networking.k8s.io @JOBS
no delete networkpolicies.networking.k8s.io @JOBS
no update endpointslices.discovery.k8s.io @JOBS
no delete endpointslices.discovery.k8s.io @JOBS
no update nodes @JOBS
no delete nodes @JOBS
no create priorityclasses.scheduling.k8s.io @JOBS
no update persistentvolumeclaims @JOBS
no delete persistentvolumes @JOBS
no create storageclasses.storage.k8s.io @JOBS
no update leases.coordination.k8s.io @JOBS
no update leases.coordination.k8s.io kube-node-lease
no list leases.coordination.k8s.io @NS
no create deployments.apps @NS
no list customresourcedefinitions.apiextensions.k8s.io @NS
no create clusterroles.rbac.authorization.k8s.io @NS
no create serviceaccounts/token @NS
GRANTS
  # Renewing is limited to this release's Lease.
  local lease
  for lease in "$FULLNAME:yes" "other-operator:no"; do
    got="$(kubectl auth can-i update "leases.coordination.k8s.io/${lease%%:*}" -n "$NS" \
             --as "$SA" 2>/dev/null || true)"
    [[ "$got" == "${lease#*:}" ]] ||
      { echo "  update lease ${lease%%:*}: want ${lease#*:}, got $got" >&2; bad=1; }
  done
  (( bad == 0 )) || fail "the ServiceAccount's grants differ from what the operator uses"
  ok "ServiceAccount grants: every verb the operator uses, none of the near misses"
}

# Namespace users through the built-in roles (rbac.aggregateToDefaultRoles): an editor (a
# RoleBinding to `edit`) creates a TrainingJob, a viewer (`view`) reads it and cannot create one,
# neither writes its status, and a user with no binding sees nothing. Impersonated users against
# the real API server, whose clusterrole-aggregation controller copies the chart's rules into the
# built-in roles.
user_roles() {
  local editor="alice-$SUFFIX" viewer="bob-$SUFFIX" stranger="carol-$SUFFIX"
  kubectl create rolebinding editors -n "$JOBS_NS" --clusterrole edit --user "$editor" >/dev/null
  kubectl create rolebinding viewers -n "$JOBS_NS" --clusterrole view --user "$viewer" >/dev/null
  # as_can USER VERB RESOURCE[/SUBRESOURCE] (a subresource in --subresource, as can_i does)
  as_can() {
    local sub=(); [[ "$3" == */* ]] && sub=(--subresource "${3#*/}")
    kubectl auth can-i "$2" "${3%%/*}" "${sub[@]}" -n "$JOBS_NS" --as "$1" 2>/dev/null || true
  }
  aggregated() { [[ "$(as_can "$editor" create trainingjobs.lockstep.dev)" == yes ]]; }
  wait_for 30 aggregated || fail "an editor cannot create TrainingJobs (edit not aggregated)"
  training_job by-editor | kubectl create -n "$JOBS_NS" --as "$editor" -f - >/dev/null 2>"$WORK/editor.err" ||
    fail "the editor's create was refused: $(cat "$WORK/editor.err")"
  kubectl patch trainingjob by-editor -n "$JOBS_NS" --as "$editor" --type=merge \
    -p '{"metadata":{"labels":{"team":"a"}}}' >/dev/null || fail "the editor cannot patch a job"
  kubectl get trainingjob by-editor -n "$JOBS_NS" --as "$viewer" >/dev/null ||
    fail "the viewer cannot read a TrainingJob"
  if training_job by-viewer | kubectl create -n "$JOBS_NS" --as "$viewer" -f - \
       >/dev/null 2>"$WORK/viewer.err"; then
    fail "the viewer created a TrainingJob"
  fi
  grep -q Forbidden "$WORK/viewer.err" || fail "the viewer's create failed, not as Forbidden: $(cat "$WORK/viewer.err")"
  local who verb resource want got bad=0
  while read -r who verb resource want; do
    case "$who" in @E) got="$(as_can "$editor" "$verb" "$resource")" ;;
                   @V) got="$(as_can "$viewer" "$verb" "$resource")" ;;
                   @S) got="$(as_can "$stranger" "$verb" "$resource")" ;; esac
    [[ "$got" == "$want" ]] || { echo "  $who $verb $resource: want $want, got $got" >&2; bad=1; }
  done <<'CAN'
@E delete trainingjobs.lockstep.dev yes
@E deletecollection trainingjobs.lockstep.dev yes
@E get trainingjobs.lockstep.dev/status yes
@E patch trainingjobs.lockstep.dev/status no
@V list trainingjobs.lockstep.dev yes
@V watch trainingjobs.lockstep.dev yes
@V delete trainingjobs.lockstep.dev no
@V patch trainingjobs.lockstep.dev no
@S get trainingjobs.lockstep.dev no
CAN
  (( bad == 0 )) || fail "the aggregated roles grant other than intended"
  kubectl delete trainingjob by-editor -n "$JOBS_NS" --as "$editor" >/dev/null ||
    fail "the editor cannot delete a job"
  ok "namespace users: edit creates/patches/deletes TrainingJobs, view reads, neither writes status"
}

# The CRD gains spec.upgradeProbe in a copy of the chart; after `helm upgrade` the API server
# keeps that field on a TrainingJob instead of pruning it.
upgrade() {
  cp -r "$CHART" "$WORK/chart"
  local crd="$WORK/chart/files/crds/$CRD_FILE"
  awk '/^          spec:$/ {in_spec = 1}
       in_spec && !done && /^            properties:$/ {
         print
         print "              upgradeProbe:"
         print "                type: string"
         print "                description: Added by the Helm upgrade test."
         done = 1; next
       }
       {print}' "$CHART/files/crds/$CRD_FILE" >"$crd"
  grep -q '^              upgradeProbe:$' "$crd" || fail "could not add a field to the CRD copy"
  kubectl create namespace "$JOBS_NS" >/dev/null 2>&1 || true
  helm upgrade "$RELEASE" "$WORK/chart" -n "$NS" >"$WORK/upgrade.out" 2>&1 ||
    { cat "$WORK/upgrade.out"; fail "helm upgrade"; }
  has_field() {
    local props='.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties'
    [[ "$(kubectl get crd "$CRD_NAME" -o jsonpath="{$props.upgradeProbe.type}")" == string ]]
  }
  wait_for 30 has_field || fail "helm upgrade did not apply the CRD's new field"
  wait_for 30 crd_established || fail "CRD not Established after upgrade"
  # The new schema reaches the API server's handlers a moment after the CRD object changes.
  kept() {
    training_job upgraded "  upgradeProbe: kept" |
      kubectl apply -n "$JOBS_NS" -f - >/dev/null 2>&1 &&
      [[ "$(job_field "$JOBS_NS" upgraded .spec.upgradeProbe)" == kept ]]
  }
  wait_for 30 kept || fail "a TrainingJob's new field was pruned after the upgrade"
  ok "helm upgrade applied the CRD's new field (TrainingJob keeps spec.upgradeProbe)"
}

uninstall() {
  training_job survivor | kubectl apply -n "$JOBS_NS" -f - >/dev/null || fail "create TrainingJob"
  helm uninstall "$RELEASE" -n "$NS" >"$WORK/uninstall.out" 2>&1 ||
    { cat "$WORK/uninstall.out"; fail "helm uninstall"; }
  grep -q "kept due to the resource policy" "$WORK/uninstall.out" ||
    fail "helm did not report keeping the CRD: $(cat "$WORK/uninstall.out")"
  deployment_gone() { ! kubectl get deployment "$FULLNAME" -n "$NS" >/dev/null 2>&1; }
  wait_for 30 deployment_gone || fail "Deployment survived helm uninstall"
  ! kubectl get clusterrole "$FULLNAME" >/dev/null 2>&1 || fail "ClusterRole survived uninstall"
  kubectl get crd "$CRD_NAME" >/dev/null 2>&1 || fail "helm uninstall deleted the CRD"
  kubectl get trainingjob survivor upgraded -n "$JOBS_NS" >/dev/null ||
    fail "helm uninstall deleted TrainingJobs"
  ok "helm uninstall removed the operator, kept the CRD and the TrainingJobs"
}

lint
install
kubectl create namespace "$JOBS_NS" >/dev/null
rbac
user_roles
upgrade
uninstall
echo "helm install/upgrade/uninstall: all checks passed"
