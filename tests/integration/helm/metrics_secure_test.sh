#!/usr/bin/env bash
# metrics.secure against the real API server: the chart installed with metrics.secure=true (its
# CRD left alone: crds.install=false), lockstep-operator run as a local process with only a
# TokenRequest token of the chart's ServiceAccount and the flags the chart's Deployment passes,
# then /metrics scraped over HTTPS as controller-runtime's filter answers: 401 without a token
# and with a made-up one, 403 for a ServiceAccount without the metrics-reader role, 200 for one
# bound to it through metrics.readerSubjects. The operator's TokenReview and SubjectAccessReview
# go through the chart's grants; repeated scrapes cost no API call (the decision is cached); no
# token reaches the log. A real Prometheus scrapes it as prometheus-operator configures it from
# the chart's secure ServiceMonitor (https, the token file as bearer credentials, the tlsConfig):
# up with the reader's token, down with 403 with the other's. Then again with a certificate from
# files (--metrics-cert-path), which curl verifies.
#
#   metrics_secure_test.sh /path/to/lockstep-operator
#
# Isolated (runs beside other tests): its own namespaces and release, rbac.scope=namespace so its
# operator watches only its own jobs namespace, the cluster's CRD untouched.
set -euo pipefail
# shellcheck source=tests/integration/helm/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=hack/lib/sa-kubeconfig.sh
source "$REPO/hack/lib/sa-kubeconfig.sh"
require_tools
OPERATOR="${1:?usage: $0 /path/to/lockstep-operator}"
[[ -x "$OPERATOR" ]] || fail "lockstep-operator not built at $OPERATOR"
command -v openssl >/dev/null || fail "openssl not on PATH"

NS="lockstep-msec-$SUFFIX"
JOBS_NS="lockstep-msec-jobs-$SUFFIX"
RELEASE="ls-msec-$RANDOM"
FULLNAME="$RELEASE-lockstep"
WORK="$(mktemp -d)"
OPERATOR_PID=""
PROMETHEUS_PID=""

stop_operator() {
  if [[ -n "$OPERATOR_PID" ]]; then
    kill "$OPERATOR_PID" 2>/dev/null || true
    wait "$OPERATOR_PID" 2>/dev/null || true
    OPERATOR_PID=""
  fi
}
cleanup() {
  if [[ -n "$PROMETHEUS_PID" ]]; then
    kill "$PROMETHEUS_PID" 2>/dev/null || true
    wait "$PROMETHEUS_PID" 2>/dev/null || true
  fi
  stop_operator
  helm uninstall "$RELEASE" -n "$NS" >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" "$JOBS_NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

install_chart() {
  if ! crd_established; then  # hack/test.sh applies it first; a lone run may need it
    kubectl apply --server-side --force-conflicts -f "$REPO/crds/" >/dev/null
    wait_for 60 crd_established || fail "CRD not Established"
  fi
  kubectl create namespace "$NS" >/dev/null
  kubectl create namespace "$JOBS_NS" >/dev/null
  # templatePolicy off: its ValidatingAdmissionPolicy is cluster-wide, and this test runs beside
  # others whose jobs it is not this test's business to refuse (template_policy_test.sh tests it).
  helm install "$RELEASE" "$CHART" -n "$NS" --set crds.install=false \
    --set rbac.scope=namespace --set "rbac.namespaces={$JOBS_NS}" \
    --set templatePolicy.enabled=false \
    --set metrics.secure=true \
    --set metrics.readerSubjects[0].kind=ServiceAccount \
    --set metrics.readerSubjects[0].name=prometheus \
    --set "metrics.readerSubjects[0].namespace=$NS" >"$WORK/install.out" 2>&1 ||
    { cat "$WORK/install.out"; fail "helm install"; }
  kubectl get clusterrole "$FULLNAME-metrics-reader" >/dev/null || fail "no metrics-reader role"
  kubectl get clusterrolebinding "$FULLNAME-metrics-auth" >/dev/null || fail "no metrics-auth binding"
  kubectl create serviceaccount prometheus -n "$NS" >/dev/null
  kubectl create serviceaccount intruder -n "$NS" >/dev/null
  ok "chart installed with metrics.secure=true ($RELEASE in $NS); prometheus bound to the metrics-reader role, intruder not"
}

# start_operator [FLAGS...]: the chart's Deployment flags for metrics, plus FLAGS.
start_operator() {
  METRICS_PORT="$(free_port)"; HEALTH_PORT="$(free_port)"
  "$OPERATOR" --kubeconfig "$WORK/sa.kubeconfig" --namespace "$JOBS_NS" \
    --metrics-bind-address "127.0.0.1:$METRICS_PORT" --metrics-secure "$@" \
    --health-probe-bind-address "127.0.0.1:$HEALTH_PORT" \
    --launcher-image lockstep/launcher:0.1.0 --log-format text \
    >>"$WORK/operator.log" 2>&1 &
  OPERATOR_PID=$!
  ready() { curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1; }
  wait_for 60 ready || { tail -30 "$WORK/operator.log"; fail "operator not ready"; }
}

# scrape TOKEN [CURL_FLAGS...]: "<code> <body>" of GET https://127.0.0.1:PORT/metrics.
scrape() {
  local token="$1"; shift
  local auth=()
  [[ -n "$token" ]] && auth=(-H "Authorization: Bearer $token")
  curl -sS --max-time 10 "${auth[@]}" -o "$WORK/body" -w '%{http_code}' "$@" \
    "https://127.0.0.1:$METRICS_PORT/metrics" || echo "curl failed"
}

# POST requests the operator has made (its TokenReviews and SubjectAccessReviews among them).
posts() {
  curl -ksS -H "Authorization: Bearer $PROM" "https://127.0.0.1:$METRICS_PORT/metrics" |
    awk '/^rest_client_requests_total\{/ && /method="POST"/ {n += $NF} END {print n + 0}'
}

check_answers() {
  local code
  code="$(scrape "" -k)"
  [[ "$code" == 401 ]] || fail "no token: $code, want 401"
  code="$(scrape "not-a-token" -k)"
  [[ "$code" == 401 ]] || fail "garbage token: $code, want 401"
  code="$(scrape "$INTRUDER" -k)"
  [[ "$code" == 403 ]] || fail "intruder: $code, want 403"
  grep -q "Authorization denied for user system:serviceaccount:$NS:intruder" "$WORK/body" ||
    fail "403 body: $(cat "$WORK/body")"
  # The binding is new: the authorizer's RBAC cache may lag it by a moment (a 403 is cached 10 s).
  allowed() { [[ "$(scrape "$PROM" -k)" == 200 ]]; }
  wait_for 30 allowed || fail "prometheus: $(scrape "$PROM" -k) $(cat "$WORK/body"), want 200"
  grep -q '^rest_client_requests_total' "$WORK/body" || fail "200 without the metrics"
  ok "HTTPS /metrics: no token 401, garbage token 401, intruder 403, metrics-reader 200"
  if curl -fsS --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null 2>&1; then
    fail "plain HTTP answered on the secure port"
  fi
  local before after
  before="$(posts)"
  for _ in 1 2 3 4 5; do [[ "$(scrape "$PROM" -k)" == 200 ]] || fail "cached scrape"; done
  after="$(posts)"
  [[ "$before" == "$after" ]] || fail "5 scrapes made $((after - before)) API calls, want 0 (cached)"
  ok "5 more scrapes with the same token: no API call (POSTs stay $after)"
}

# The chart's secure ServiceMonitor endpoint as prometheus-operator turns it into a scrape config
# (scheme, bearerTokenFile as authorization credentials_file, tlsConfig), for two targets: the
# same operator scraped with the reader's token and with the intruder's.
prometheus_scrapes() {
  local prom="${PROMETHEUS:-$(command -v prometheus || true)}"
  if [[ -z "$prom" ]]; then
    echo "note: prometheus not installed; the scrape by a real Prometheus is not exercised"
    return
  fi
  local scheme skip token_file
  read -r scheme skip token_file < <(
    helm template "$RELEASE" "$CHART" -n "$NS" --kube-version "$K8S_VERSION" \
      --set metrics.secure=true --set serviceMonitor.enabled=true \
      --show-only templates/servicemonitor.yaml | python3 -c '
import sys, yaml
e = yaml.safe_load(sys.stdin)["spec"]["endpoints"][0]
print(e["scheme"], str(e["tlsConfig"].get("insecureSkipVerify", False)).lower(), e["bearerTokenFile"])'
  ) || fail "no secure ServiceMonitor rendered"
  [[ "$scheme" == https && "$skip" == true &&
     "$token_file" == /var/run/secrets/kubernetes.io/serviceaccount/token ]] ||
    fail "ServiceMonitor: scheme $scheme, insecureSkipVerify $skip, bearerTokenFile $token_file"
  # What the kubelet mounts at $token_file in Prometheus's pod.
  printf '%s' "$PROM" >"$WORK/reader.token"
  printf '%s' "$INTRUDER" >"$WORK/intruder.token"
  local job port; port="$(free_port)"
  {
    echo "global: {scrape_interval: 1s}"
    echo "scrape_configs:"
    for job in reader intruder; do
      cat <<JOB
- job_name: $job
  scheme: $scheme
  authorization: {type: Bearer, credentials_file: $WORK/$job.token}
  tls_config: {insecure_skip_verify: $skip}
  static_configs: [{targets: ["127.0.0.1:$METRICS_PORT"]}]
JOB
    done
  } >"$WORK/prometheus.yml"
  "$prom" --config.file "$WORK/prometheus.yml" --storage.tsdb.path "$WORK/tsdb" \
    --web.listen-address "127.0.0.1:$port" --log.level warn >"$WORK/prometheus.log" 2>&1 &
  PROMETHEUS_PID=$!
  targets() { curl -fsS "http://127.0.0.1:$port/api/v1/targets" 2>/dev/null; }
  both_seen() {
    targets | python3 -c '
import json, sys
t = {a["labels"]["job"]: a for a in json.load(sys.stdin)["data"]["activeTargets"]}
ok = t["reader"]["health"] == "up" and t["intruder"]["health"] == "down" and "403" in t["intruder"]["lastError"]
sys.exit(0 if ok else 1)' 2>/dev/null
  }
  wait_for 60 both_seen || { targets; tail -5 "$WORK/prometheus.log"; fail "Prometheus's targets"; }
  local series
  series="$(curl -fsS "http://127.0.0.1:$port/api/v1/query" \
              --data-urlencode 'query=count(rest_client_requests_total{job="reader"})' |
            python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')"
  (( series > 0 )) || fail "no series scraped with the reader's token"
  kill "$PROMETHEUS_PID"; wait "$PROMETHEUS_PID" 2>/dev/null || true; PROMETHEUS_PID=""
  ok "Prometheus ($("$prom" --version 2>&1 | head -1 | awk '{print $3}')) with the ServiceMonitor's https, bearer token file and tlsConfig: reader up ($series series), intruder down (403)"
}

self_signed() {
  write_service_account_kubeconfig "$NS" "$FULLNAME" 1h "$WORK/sa.kubeconfig" ||
    fail "TokenRequest failed"
  PROM="$(kubectl create token prometheus -n "$NS" --duration=1h)"
  INTRUDER="$(kubectl create token intruder -n "$NS" --duration=1h)"
  start_operator
  grep -q "self-signed" "$WORK/operator.log" || fail "the self-signed certificate is not logged"
  check_answers
  prometheus_scrapes
  stop_operator
}

cert_files() {
  mkdir -p "$WORK/certs"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj "/CN=$FULLNAME-metrics.$NS.svc" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$WORK/certs/tls.key" -out "$WORK/certs/tls.crt" 2>/dev/null
  start_operator --metrics-cert-path "$WORK/certs"
  # Verified this time: the certificate is the trust anchor, 127.0.0.1 in its names.
  local code; code="$(scrape "$PROM" --cacert "$WORK/certs/tls.crt")"
  [[ "$code" == 200 ]] || fail "verified scrape with --metrics-cert-path: $code"
  code="$(scrape "" --cacert "$WORK/certs/tls.crt")"
  [[ "$code" == 401 ]] || fail "verified scrape without a token: $code"
  ok "--metrics-cert-path: the files' certificate served and verified by curl; 200 and 401 as before"
  stop_operator
}

no_tokens_logged() {
  local t
  for t in "$PROM" "$INTRUDER" not-a-token; do
    if grep -qF -- "$t" "$WORK/operator.log"; then fail "a token is in the operator's log"; fi
  done
  if grep -i 'forbidden' "$WORK/operator.log"; then fail "Forbidden in the operator log"; fi
  ok "no token in the operator's log; no review refused by RBAC"
}

install_chart
self_signed
cert_files
no_tokens_logged
echo "metrics.secure: all checks passed"
