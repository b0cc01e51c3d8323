#!/usr/bin/env bash
# Every panel of the Grafana dashboard shows data from a real operator: run lockstep-operator
# against the local control plane, scrape it with a real Prometheus (Debian's package) every
# second, drive TrainingJobs through their lives (one runs and succeeds, one loses a node and
# recovers), then evaluate each panel's PromQL with the template variables substituted through
# Prometheus's HTTP API on loopback. A query that returns no series fails the test.
#
# The scrape is configured as prometheus-operator configures it from the chart's ServiceMonitor
# (helm template --set serviceMonitor.enabled=true): the target carries the labels it gives
# every ServiceMonitor target (namespace and service of the operator's Service, endpoint, job)
# and honor_labels is the ServiceMonitor's honorLabels. The namespace picker must offer the jobs'
# namespace and the panels are evaluated with it chosen: with honorLabels false Prometheus
# renames the jobs' `namespace` label `exported_namespace` and both fail
# (LOCKSTEP_TEST_HELM_SET=serviceMonitor.honorLabels=false shows it).
#
#   prometheus_dashboard_test.sh /path/to/lockstep-operator
set -euo pipefail
# shellcheck source=tests/integration/helm/lib.sh
source "$(dirname "$0")/lib.sh"
require_tools
OPERATOR="${1:?usage: $0 /path/to/lockstep-operator}"
[[ -x "$OPERATOR" ]] || fail "lockstep-operator not built at $OPERATOR"
PROMETHEUS="${PROMETHEUS:-$(command -v prometheus || echo /usr/bin/prometheus)}"
[[ -x "$PROMETHEUS" ]] || fail "prometheus not installed (Debian package prometheus, hack/setup.sh)"
DASHBOARD="$REPO/helm/lockstep/dashboards/lockstep.json"

JOBS_NS="lockstep-prom-$SUFFIX"
WORK="$(mktemp -d)"
OPERATOR_PID="" PROMETHEUS_PID=""

cleanup() {
  local pid
  for pid in "$OPERATOR_PID" "$PROMETHEUS_PID"; do
    [[ -n "$pid" ]] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  done
  # Give the node back to kwok so later suites have every node: kwok recreates a deleted Lease.
  if [[ -s "$WORK/killed-node" ]]; then
    kubectl -n kube-node-lease delete lease "$(cat "$WORK/killed-node")" >/dev/null 2>&1 || true
  fi
  kubectl delete namespace "$JOBS_NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

start_operator() {
  kubectl apply -f "$REPO/crds/$CRD_FILE" >/dev/null
  wait_for 60 crd_established || fail "CRD not Established"
  kubectl create namespace "$JOBS_NS" >/dev/null
  METRICS_PORT="$(free_port)"; HEALTH_PORT="$(free_port)"
  "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$JOBS_NS" \
    --leader-elect --leader-election-namespace "$JOBS_NS" \
    --metrics-bind-address "127.0.0.1:$METRICS_PORT" \
    --health-probe-bind-address "127.0.0.1:$HEALTH_PORT" \
    --launcher-image lockstep/launcher:0.1.0 --log-format text >"$WORK/operator.log" 2>&1 &
  OPERATOR_PID=$!
  ready() { curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1; }
  wait_for 60 ready || { tail -30 "$WORK/operator.log"; fail "operator not ready"; }
  ok "operator ready, metrics on 127.0.0.1:$METRICS_PORT"
}

# The chart's ServiceMonitor as prometheus-operator turns it into a scrape config, the target
# being this operator process: "<honorLabels> <Service name> <Service namespace>".
service_monitor() {
  local set=(--set serviceMonitor.enabled=true)
  [[ -z "${LOCKSTEP_TEST_HELM_SET:-}" ]] || set+=(--set "$LOCKSTEP_TEST_HELM_SET")
  helm template lockstep "$CHART" -n lockstep-system --kube-version "$K8S_VERSION" "${set[@]}" \
    --show-only templates/servicemonitor.yaml | python3 -c '
import sys, yaml
sm = yaml.safe_load(sys.stdin)
endpoint = sm["spec"]["endpoints"][0]
service = sm["metadata"]["name"] + "-metrics"
print(str(endpoint.get("honorLabels", False)).lower(), service,
      sm["spec"]["namespaceSelector"]["matchNames"][0])'
}

start_prometheus() {
  PROM_PORT="$(free_port)"
  local honor service service_ns
  read -r honor service service_ns < <(service_monitor) || fail "no ServiceMonitor rendered"
  SCRAPE_JOB="$service"
  cat >"$WORK/prometheus.yml" <<CONFIG
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: serviceMonitor/$service_ns/lockstep/0
  honor_labels: $honor
  static_configs:
  - targets: ["127.0.0.1:$METRICS_PORT"]
    labels: {namespace: $service_ns, service: $service, endpoint: metrics, job: $service,
             pod: lockstep-operator-0, container: operator}
CONFIG
  ok "scrape config from the chart's ServiceMonitor: honor_labels $honor, target namespace $service_ns"
  "$PROMETHEUS" --config.file "$WORK/prometheus.yml" --storage.tsdb.path "$WORK/tsdb" \
    --web.listen-address "127.0.0.1:$PROM_PORT" --log.level warn >"$WORK/prometheus.log" 2>&1 &
  PROMETHEUS_PID=$!
  up() {
    local r
    r="$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=up == 1')" &&
      grep -q "\"$SCRAPE_JOB\"" <<<"$r"
  }
  wait_for 60 up || { tail -20 "$WORK/prometheus.log"; fail "Prometheus does not scrape"; }
  local version; version="$("$PROMETHEUS" --version 2>&1 | head -1 | awk '{print $3}')"
  ok "Prometheus $version scrapes the operator every second"
}

state_of() { job_field "$JOBS_NS" "$1" .status.state; }
state_is() { [[ "$(state_of "$1")" == "$2" ]]; }

# Like a kubelet whose containers exited 0: every pod of the job Succeeded.
SUCCEEDED='{"status": {"phase": "Succeeded", "containerStatuses": [{"name": "trainer",
  "ready": false, "restartCount": 0, "image": "lockstep/examples:dev", "imageID": "",
  "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}'
succeed_pods() {
  local pod
  for pod in $(pods_of "$JOBS_NS" "$1" | cut -f1); do
    kubectl patch pod "$pod" -n "$JOBS_NS" --subresource=status --type=merge -p "$SUCCEEDED" \
      >/dev/null
  done
}

drive_jobs() {
  training_job prom-ok | kubectl apply -n "$JOBS_NS" -f - >/dev/null
  training_job prom-recover | kubectl apply -n "$JOBS_NS" -f - >/dev/null
  wait_for 90 state_is prom-ok Running || fail "prom-ok not Running: $(state_of prom-ok)"
  wait_for 90 state_is prom-recover Running || fail "prom-recover not Running"
  ok "two jobs Running"
  succeed_pods prom-ok
  wait_for 60 state_is prom-ok Succeeded || fail "prom-ok not Succeeded: $(state_of prom-ok)"
  ok "prom-ok Succeeded"
  # A node dies the way a kubelet does: its Lease stops being renewed. kwok leaves alone a Lease
  # held by someone else (removing its node annotation does not stop it renewing).
  local node; node="$(pods_of "$JOBS_NS" prom-recover | awk -F'\t' 'NR == 1 {print $2}')"
  [[ -n "$node" ]] || fail "prom-recover has no bound pod"
  echo "$node" >"$WORK/killed-node"
  kubectl -n kube-node-lease patch lease "$node" --type=merge \
    -p '{"spec":{"holderIdentity":"killed-by-test","leaseDurationSeconds":3600}}' >/dev/null
  # shellcheck disable=SC2329  # called through wait_for
  restarted() {
    [[ "$(job_field "$JOBS_NS" prom-recover .status.attempt)" -ge 1 ]]
  }
  wait_for 180 restarted || fail "no restart after $node died: $(state_of prom-recover)"
  wait_for 120 state_is prom-recover Running || fail "prom-recover did not recover"
  ok "prom-recover lost $node and runs again"
  report_progress prom-recover
}

# kwok runs no launcher to report training progress, so the test writes status.progress the way
# the operator would from one (docs/api.md "status.progress"): the operator keeps a written
# progress while no report comes and sets the progress gauges of an active job from it.
report_progress() {
  local now; now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  kubectl patch trainingjob "$1" -n "$JOBS_NS" --subresource=status --type=merge -p \
    "{\"status\": {\"progress\": {\"step\": 40, \"totalSteps\": 100, \"percent\": 40,
      \"samplesPerSecond\": 12.5, \"lastUpdate\": \"$now\"}}}" >/dev/null
  # shellcheck disable=SC2329  # called through wait_for
  gauge_set() {
    curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" |
      grep -q "^lockstep_job_samples_per_second{.*name=\"$1\""
  }
  wait_for 30 gauge_set "$1" || fail "no lockstep_job_samples_per_second for $1"
  ok "$1 reports progress"
}

# One line per target: "<panel title>\t<expr>", template variables substituted as Grafana would
# with the jobs' namespace chosen in the picker.
panel_queries() {
  python3 - "$DASHBOARD" "$JOBS_NS" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
for panel in dashboard["panels"]:
    for target in panel.get("targets", []):
        expr = (target["expr"].replace("$__rate_interval", "1m").replace("$__range", "1h")
                .replace("$namespace", sys.argv[2]).replace("${namespace}", sys.argv[2]))
        print(f'{panel["title"]}\t{expr}')
PY
}

# The namespace picker's choices (its label_values() query, as Grafana asks Prometheus for it)
# include the jobs' namespace.
namespace_picker() {
  local query match
  query="$(jq -r '.templating.list[] | select(.name == "namespace") | .query.query // .query' \
             "$DASHBOARD")"
  [[ "$query" =~ ^label_values\(([a-z_]+),\ *namespace\)$ ]] || fail "picker query: $query"
  match="${BASH_REMATCH[1]}"
  local values
  values="$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/label/namespace/values" \
              --data-urlencode "match[]=$match" -G | jq -r '.data[]')"
  if ! grep -qx "$JOBS_NS" <<<"$values"; then
    echo "FAIL: the namespace picker offers [$(tr '\n' ' ' <<<"$values")], not $JOBS_NS" >&2
    return 1
  fi
  ok "the namespace picker offers $JOBS_NS ($query)"
}

evaluate_panels() {
  sleep 5  # at least a few scrapes after the last transition, for rate() windows
  local picker=0
  namespace_picker || picker=1
  local title expr result count failed=0 total=0
  while IFS=$'\t' read -r title expr; do
    total=$((total + 1))
    result="$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/query" \
                --data-urlencode "query=$expr")" ||
      { echo "  FAIL $title: query error for $expr" >&2; failed=$((failed + 1)); continue; }
    count="$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["result"]))' \
               <<<"$result")"
    if (( count == 0 )); then
      echo "  FAIL $title: no series for $expr" >&2; failed=$((failed + 1))
    else
      echo "  ok $title: $count series"
    fi
  done < <(panel_queries)
  if (( failed > 0 )); then
    echo "FAIL: $failed of $total panel queries returned no series" >&2
    return 1
  fi
  (( picker == 0 )) || return 1
  ok "all $total panel queries return data"
}

start_operator
start_prometheus
# Panels are evaluated even when a lifecycle step fails, so the report shows which panels that
# step would have fed; either failure fails the test.
drive_rc=0
( drive_jobs ) || drive_rc=$?
panels_rc=0
evaluate_panels || panels_rc=$?
(( drive_rc == 0 )) || fail "the job lifecycle did not complete (see above)"
(( panels_rc == 0 )) || fail "some panels show no data"
echo "dashboard against a real Prometheus: all checks passed"
