# Lockstep installed on a local cluster the way a user installs it, with the Helm chart, except
# that the operator runs as a process here: there is no container runtime (and no kube-scheduler)
# to run the chart's Deployment, so it is scaled to zero and the same binary runs with the chart's
# flags and only a TokenRequest token of the chart's ServiceAccount, never admin credentials.
# Sourced by hack/demo.sh (with hack/lib/helm-crd.sh); needs $STATE, $KUBECONFIG and kubectl/helm
# on PATH.
# shellcheck shell=bash

DEMO_RELEASE=lockstep DEMO_NAMESPACE=lockstep-system

install_chart() {
  adopt_crd "$DEMO_RELEASE" "$DEMO_NAMESPACE"  # hack/lib/helm-crd.sh
  helm upgrade --install "$DEMO_RELEASE" "$REPO_ROOT/helm/lockstep" -n "$DEMO_NAMESPACE" \
    --create-namespace >"$STATE/logs/helm.log" 2>&1 || { cat "$STATE/logs/helm.log" >&2; die "helm install"; }
  kubectl wait --for=condition=Established crd/trainingjobs.lockstep.dev --timeout=60s >/dev/null
  kubectl -n "$DEMO_NAMESPACE" scale deployment "$DEMO_RELEASE" --replicas 0 >/dev/null
}

# The flags of the chart's Deployment, read back from the cluster, with the listen addresses on
# loopback and text logs; plus the demo's short node-lease grace.
operator_args() {
  kubectl -n "$DEMO_NAMESPACE" get deployment "$DEMO_RELEASE" \
    -o go-template='{{range (index .spec.template.spec.containers 0).args}}{{.}}{{"\n"}}{{end}}' |
    grep -vE '^--(metrics-bind-address|health-probe-bind-address|log-format)='
  echo "--metrics-bind-address=$DEMO_METRICS_ADDR"
  echo "--health-probe-bind-address=$DEMO_HEALTH_ADDR"
  echo "--log-format=text"
  echo "--node-lease-grace=$DEMO_LEASE_GRACE"
}

# (Re)starts lockstep-operator as this cluster's process (pids/operator: `down` stops it) and
# waits until it is ready and leads.
start_operator() {
  local build="$1" kubeconfig="$STATE/operator.kubeconfig" args
  stop_component operator
  # The previous process's leader Lease would make this one wait out its duration (15 s).
  kubectl -n "$DEMO_NAMESPACE" delete lease "$DEMO_RELEASE" --ignore-not-found >/dev/null
  # Valid 24 h; a rerun of the demo mints a new one.
  write_service_account_kubeconfig "$DEMO_NAMESPACE" "$DEMO_RELEASE" 24h "$kubeconfig"
  mapfile -t args < <(operator_args)
  setsid nohup "$build/bin/lockstep-operator" --kubeconfig "$kubeconfig" "${args[@]}" \
    >"$STATE/logs/operator.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/operator"
  operator_leads() {
    curl -fsS "http://$DEMO_METRICS_ADDR/metrics" 2>/dev/null |
      grep -qE '^leader_election_master_status\{.*\} 1(\.0+)?$'
  }
  local deadline=$((SECONDS + 60))
  until operator_leads; do
    if ! component_alive operator || (( SECONDS >= deadline )); then
      tail -20 "$STATE/logs/operator.log" >&2
      die "the operator did not become ready and leader (log: $STATE/logs/operator.log)"
    fi
    sleep 0.2
  done
  echo "  operator (pid $(cat "$STATE/pids/operator")) runs as" \
    "$(KUBECONFIG="$kubeconfig" kubectl auth whoami -o jsonpath='{.status.userInfo.username}')," \
    "flags from the chart's Deployment: ${args[*]}"
}
