# Lockstep installed on a local cluster the way a user installs it: `helm install` of the chart,
# whose Deployment runs both operator replicas from the operator image that hack/build-images.sh
# built. The test node agent (hack/lib/cluster-agent.sh, docs/e2e.md "Images") runs them with
# runc from its image store, binds them to its nodes (the local control plane has no
# kube-scheduler: --schedule-namespace) and routes the kubernetes Service to the apiserver
# (--apiserver-proxy), so each operator pod works with its own projected ServiceAccount token,
# as in any cluster. Sourced by hack/demo.sh (with hack/lib/helm-crd.sh and
# hack/lib/cluster-agent.sh); needs $STATE, $KUBECONFIG and kubectl/helm on PATH.
# shellcheck shell=bash

DEMO_RELEASE=lockstep DEMO_NAMESPACE=lockstep-system
DEMO_OPERATORS="app.kubernetes.io/instance=$DEMO_RELEASE,app.kubernetes.io/component=operator"

# The agent flags that let it run the chart's pods: both images in its store, the kubernetes
# Service for the operator's in-cluster config, the default scheduler's job in the namespace.
demo_agent_flags() {
  echo --image-layout "$BUILD/images/operator" --image-layout "$BUILD/images/launcher"
  echo --apiserver-proxy=true --schedule-namespace "$DEMO_NAMESPACE"
}

# Operator pods an earlier run's agent ran are gone with it; their objects would block nothing
# but confuse the listing, so they are force-deleted before a new agent starts (the ReplicaSet
# makes new ones). An operator process of an older demo version is stopped.
forget_old_operators() {
  stop_component operator
  kubectl get namespace "$DEMO_NAMESPACE" >/dev/null 2>&1 || return 0
  kubectl -n "$DEMO_NAMESPACE" delete pods -l "$DEMO_OPERATORS" --force --grace-period=0 \
    >/dev/null 2>&1 || true
}

# The chart with its defaults (2 replicas, leader election, its RBAC, hardened pods) plus the
# demo's short node-lease grace, so a lost node is noticed in seconds.
install_chart() {
  adopt_crd "$DEMO_RELEASE" "$DEMO_NAMESPACE"  # hack/lib/helm-crd.sh
  helm upgrade --install "$DEMO_RELEASE" "$REPO_ROOT/helm/lockstep" -n "$DEMO_NAMESPACE" \
    --create-namespace --set "operator.extraArgs={--node-lease-grace=$DEMO_LEASE_GRACE}" \
    >"$STATE/logs/helm.log" 2>&1 || { cat "$STATE/logs/helm.log" >&2; die "helm install"; }
  kubectl wait --for=condition=Established crd/trainingjobs.lockstep.dev --timeout=60s >/dev/null
  # A Deployment an older demo scaled to 0 gets the chart's replicas back.
  kubectl -n "$DEMO_NAMESPACE" scale deployment "$DEMO_RELEASE" \
    --replicas "$(helm get values "$DEMO_RELEASE" -n "$DEMO_NAMESPACE" --all -o json |
                  python3 -c 'import json, sys; print(json.load(sys.stdin)["replicaCount"])')" \
    >/dev/null
}

operator_pods() {
  kubectl -n "$DEMO_NAMESPACE" get pods -l "$DEMO_OPERATORS" \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' 2>/dev/null
}
leader_pod() {
  local id
  id="$(kubectl -n "$DEMO_NAMESPACE" get lease "$DEMO_RELEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)"
  echo "${id%_*}"  # the identity is <pod>_<random>
}
pod_ip() { kubectl -n "$DEMO_NAMESPACE" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
# POD leads: the Lease names it and its own metrics say so.
leads() {
  curl -fsS --max-time 3 "http://$(pod_ip "$1"):8080/metrics" 2>/dev/null |
    grep -qE '^leader_election_master_status\{.*\} 1(\.0+)?$'
}
two_operators_one_leads() {
  [[ "$(operator_pods | grep -c .)" -ge 2 ]] || return 1
  local leader; leader="$(leader_pod)"
  [[ -n "$leader" ]] && operator_pods | grep -qx "$leader" && leads "$leader"
}
# The metrics the demo shows are the leader's (it keeps the cluster-wide gauges).
# shellcheck disable=SC2034  # hack/demo.sh reads DEMO_METRICS_ADDR
point_metrics_at_leader() { DEMO_METRICS_ADDR="$(pod_ip "$(leader_pod)"):8080"; }

# The operator's own log (the agent keeps each container's output per pod uid).
operator_log() {
  local pod="${1:-$(leader_pod)}" uid
  uid="$(kubectl -n "$DEMO_NAMESPACE" get pod "$pod" -o jsonpath='{.metadata.uid}' 2>/dev/null)" || return 0
  as_root cat "$AGENT_STATE_DIR/pods/$uid/containers/operator.log" 2>/dev/null || true
}

# Waits for both replicas to run and one to lead, then shows them.
wait_for_operators() {
  wait_for 120 "both operator pods Running and one leading" two_operators_one_leads
  point_metrics_at_leader
  echo "  \$ kubectl -n $DEMO_NAMESPACE get pods -o wide"
  kubectl -n "$DEMO_NAMESPACE" get pods -o wide | sed 's/^/    /'
  local leader; leader="$(leader_pod)"
  echo "  both run $(kubectl -n "$DEMO_NAMESPACE" get pod "$leader" \
    -o jsonpath='{.status.containerStatuses[0].imageID}') with runc" \
    "($(kubectl -n "$DEMO_NAMESPACE" get pod "$leader" -o jsonpath='{.status.containerStatuses[0].containerID}')...)"
  echo "  as ServiceAccount $DEMO_RELEASE with its projected token (uid 65532, read-only root);" \
    "$leader holds the Lease"
}

# Deleting the leader's pod: it releases the Lease as it stops, another replica takes it, and the
# ReplicaSet's replacement runs from the image again.
show_hand_over() {
  local old started=$SECONDS
  old="$(leader_pod)"
  echo "  \$ kubectl -n $DEMO_NAMESPACE delete pod $old   # the leader"
  kubectl -n "$DEMO_NAMESPACE" delete pod "$old" --wait=false >/dev/null
  new_leader() { local l; l="$(leader_pod)"; [[ -n "$l" && "$l" != "$old" ]] && leads "$l"; }
  wait_for 60 "another operator pod to lead" new_leader
  echo "  $(leader_pod) leads $((SECONDS - started)) s later"
  replaced() { two_operators_one_leads && ! operator_pods | grep -qx "$old"; }
  wait_for 120 "the replacement operator pod" replaced
  point_metrics_at_leader
  kubectl -n "$DEMO_NAMESPACE" get pods -o wide | sed 's/^/    /'
}
