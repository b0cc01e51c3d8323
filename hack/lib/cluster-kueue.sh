# Kueue (sigs.k8s.io/kueue, built by hack/build-peers.sh kueue) beside a local cluster, run as a
# host process the way its Deployment would run it in a real cluster (sourced by hack/cluster.sh:
# `up --with-kueue`, `kueue`, `restart kueue`, `status`, `down`):
#   - its CRDs and RBAC from the Go module it was built from (module/config/components), rendered
#     by `kubectl kustomize` with the namespace and name prefix of Kueue's own release overlay
#     (kueue-system, kueue-), plus one ClusterRole of ours that lets it read TrainingJobs: Kueue
#     reads the owner of a Workload it manages for an external framework;
#   - its identity: a TokenRequest token of ServiceAccount kueue-system/kueue-controller-manager
#     (hack/lib/sa-kubeconfig.sh), so it has exactly the rights its manifests give it;
#   - its webhooks registered by URL, https://127.0.0.1:<port>/<path>, with a CA made for them
#     (no Service can front a host process). Only the webhooks of Kueue's own API group are
#     registered: a disabled integration's webhook is a no-op in Kueue, but registering it would
#     still send every Pod, Deployment, StatefulSet or Job create in the cluster through this one
#     process (failurePolicy Fail), so the whole cluster would stop creating pods when it stops;
#   - its shipped Configuration merged with the overrides in kueue_config_overrides.
# Files: $STATE/kueue-ports.env (KUEUE_WEBHOOK_PORT, KUEUE_HEALTH_PORT, KUEUE_METRICS_PORT),
# $STATE/kueue/ (config.yaml, manifests.yaml, kubeconfig, certs/), $STATE/pids/kueue,
# $STATE/logs/kueue.log. `down` stops it with the other registered processes.
# shellcheck shell=bash

KUEUE_NS=kueue-system
KUEUE_SA=kueue-controller-manager
# Ours, beside Kueue's own kueue-* ClusterRoles (a ClusterRole and its ClusterRoleBinding).
KUEUE_OWNER_READER=kueue-lockstep-trainingjob-reader
KUEUE_EXTERNAL_FRAMEWORK=TrainingJob.v1alpha1.lockstep.dev

kueue_built() { [[ -x "$TOOLS_BIN/kueue" ]]; }

kueue_ensure_built() {
  kueue_built && return 0
  log "kueue is not built; building it (hack/build-peers.sh kueue, minutes the first time)"
  "$REPO_ROOT/hack/build-peers.sh" kueue
}

# The manifests the recipe copied from the same module version as the binary.
kueue_module_dir() {
  echo "$(dirname "$(readlink -f "$TOOLS_BIN/kueue")")/module/config/components"
}

# A Python with PyYAML: the framework venv's (hack/setup-venv.sh) or the system's.
kueue_python() {
  local py
  for py in "$REPO_ROOT/.venv/bin/python" python3; do
    if "$py" -c 'import yaml' 2>/dev/null; then echo "$py"; return 0; fi
  done
  die "rendering Kueue's manifests needs PyYAML: run hack/setup-venv.sh (it provides .venv)"
}

kueue_allocate_ports() {
  python3 - >"$STATE/kueue-ports.env" <<'PY'
import socket
socks = []
for name in ["KUEUE_WEBHOOK_PORT", "KUEUE_HEALTH_PORT", "KUEUE_METRICS_PORT"]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    print(f"{name}={s.getsockname()[1]}")
PY
  kueue_load_ports
}

kueue_load_ports() {
  # shellcheck disable=SC1091
  source "$STATE/kueue-ports.env"
}

# A CA of its own and a serving certificate for 127.0.0.1 (the URL the apiserver calls) and the
# Service name Kueue's manifests would use; Kueue reads tls.crt and tls.key from certDir.
kueue_certs() {
  local d="$STATE/kueue/certs"
  rm -rf "$d" && mkdir -p "$d"
  openssl genrsa -out "$d/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$d/ca.key" -subj "/CN=lockstep-kueue-webhook-ca" -days 3650 \
    -sha256 -out "$d/ca.crt" 2>/dev/null
  openssl genrsa -out "$d/tls.key" 2048 2>/dev/null
  openssl req -new -key "$d/tls.key" -subj "/CN=kueue-webhook-service.$KUEUE_NS.svc" \
    -out "$d/tls.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:kueue-webhook-service.$KUEUE_NS.svc" >"$d/tls.ext"
  openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$d/tls.ext" -out "$d/tls.crt" 2>/dev/null
  rm -f "$d/tls.csr" "$d/tls.ext"
  chmod 600 "$d"/*.key
}

# With internalCertManagement off, Kueue serves its metrics with a certificate it reads from a
# fixed path, /etc/kueue/metrics/certs (cmd/kueue/main.go; no flag or field moves it), and exits
# when the files are missing. One self-signed pair is made there once per machine and shared by
# every local cluster's Kueue: only a scraper would see it, and none checks it here.
KUEUE_METRICS_CERTS=/etc/kueue/metrics/certs
kueue_metrics_certs() {
  [[ -f "$KUEUE_METRICS_CERTS/tls.crt" && -f "$KUEUE_METRICS_CERTS/tls.key" ]] && return 0
  mkdir -p "$KUEUE_METRICS_CERTS" 2>/dev/null && [[ -w "$KUEUE_METRICS_CERTS" ]] ||
    die "Kueue needs its metrics certificate in $KUEUE_METRICS_CERTS; create that directory" \
      "writable for $(id -un), or run as root"
  local tmp; tmp="$(mktemp -d "$KUEUE_METRICS_CERTS/.new.XXXX")"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/tls.key" -out "$tmp/tls.crt" \
    -subj "/CN=kueue-metrics" -addext "subjectAltName=IP:127.0.0.1" -days 3650 2>/dev/null
  chmod 600 "$tmp/tls.key"
  # Key first, then the certificate the existence check looks for, each renamed into place.
  mv "$tmp/tls.key" "$KUEUE_METRICS_CERTS/tls.key" &&
    mv "$tmp/tls.crt" "$KUEUE_METRICS_CERTS/tls.crt"
  rmdir "$tmp"
}

# Kueue's RBAC and webhook folders through an overlay that gives them the namespace and name
# prefix of Kueue's release (config/default), as `kubectl kustomize` renders them (the webhook
# folder's own patches included). kustomize takes only relative paths to another base.
kueue_kustomize() {
  local overlay="$STATE/kueue/overlay" mod; mod="$(kueue_module_dir)"
  mkdir -p "$overlay"
  cat >"$overlay/kustomization.yaml" <<KUST
namespace: $KUEUE_NS
namePrefix: kueue-
resources:
- $(realpath --relative-to="$overlay" "$mod/rbac")
- $(realpath --relative-to="$overlay" "$mod/webhook")
KUST
  kubectl kustomize "$overlay"
}

# kueue_manifests: on stdout, the namespace, Kueue's RBAC, the owner reader and the webhook
# configurations registered by URL (the Service is left out: nothing runs behind it).
kueue_manifests() {
  kueue_kustomize | KUEUE_CA="$STATE/kueue/certs/ca.crt" \
    KUEUE_URL="https://127.0.0.1:$KUEUE_WEBHOOK_PORT" KUEUE_NS="$KUEUE_NS" KUEUE_SA="$KUEUE_SA" \
    KUEUE_OWNER_READER="$KUEUE_OWNER_READER" \
    "$(kueue_python)" -c '
import base64, os, sys, yaml
env = os.environ
ca = base64.b64encode(open(env["KUEUE_CA"], "rb").read()).decode()
out = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": env["KUEUE_NS"]}}]
for doc in yaml.safe_load_all(sys.stdin):
    if not doc or doc["kind"] == "Service":
        continue
    if doc["kind"].endswith("WebhookConfiguration"):
        doc["webhooks"] = [w for w in doc["webhooks"] if all(
            g == "kueue.x-k8s.io" for r in w["rules"] for g in r["apiGroups"])]
        for w in doc["webhooks"]:
            w["clientConfig"] = {"url": env["KUEUE_URL"] + w["clientConfig"]["service"]["path"],
                                 "caBundle": ca}
    out.append(doc)
reader = env["KUEUE_OWNER_READER"]
out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": reader},
            "rules": [{"apiGroups": ["lockstep.dev"], "resources": ["trainingjobs"],
                       "verbs": ["get", "list", "watch"]}]})
out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": reader},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": reader},
            "subjects": [{"kind": "ServiceAccount", "name": env["KUEUE_SA"],
                          "namespace": env["KUEUE_NS"]}]})
yaml.safe_dump_all(out, sys.stdout, sort_keys=False)
'
}

# The overrides of the shipped Configuration (config.kueue.x-k8s.io/v1beta2; Kueue decodes it
# strictly, so a misspelt field fails its start). waitForPodsReady has no `enable` field in
# v1beta2: its presence turns it on. integrations.frameworks may not be empty (an empty list is
# defaulted to batch/job), so batch/job, the smallest set, is named; its webhooks are not
# registered (see the top of this file), so only Jobs labelled with a queue are touched, by the
# controller alone. Leader election is off: one Kueue runs per cluster, and with it on, an
# apiserver down for longer than its renewDeadline (10 s; `restart apiserver` took 10.5 s here)
# would end the process (controller-runtime exits on a lost Lease), and a restarted Kueue would
# wait for the Lease of the one before it. VisibilityOnDemand (on by default) would start the
# pending-workloads API server on 0.0.0.0:8082 with certificates in /visibility, so a second
# local cluster's Kueue could not start; the reasons a Workload waits are on its conditions.
kueue_config_overrides() {
  cat <<JSON
{
  "namespace": "$KUEUE_NS",
  "health": {"healthProbeBindAddress": "127.0.0.1:$KUEUE_HEALTH_PORT"},
  "metrics": {"bindAddress": "127.0.0.1:$KUEUE_METRICS_PORT"},
  "webhook": {"host": "127.0.0.1", "port": $KUEUE_WEBHOOK_PORT, "certDir": "$STATE/kueue/certs"},
  "internalCertManagement": {"enable": false},
  "leaderElection": {"leaderElect": false, "resourceNamespace": "$KUEUE_NS"},
  "integrations": {"frameworks": ["batch/job"],
                   "externalFrameworks": ["$KUEUE_EXTERNAL_FRAMEWORK"]},
  "waitForPodsReady": {"timeout": "5m", "blockAdmission": false},
  "manageJobsWithoutQueueName": false,
  "featureGates": {"VisibilityOnDemand": false}
}
JSON
}

# The shipped config with the overrides merged in map by map (a list is replaced whole).
kueue_write_config() {
  kueue_config_overrides | "$(kueue_python)" -c '
import json, sys, yaml
def merge(into, new):
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
cfg = yaml.safe_load(open(sys.argv[1]))
merge(cfg, json.load(sys.stdin))
yaml.safe_dump(cfg, open(sys.argv[2], "w"), sort_keys=False)
' "$(kueue_module_dir)/manager/controller_manager_config.yaml" "$STATE/kueue/config.yaml"
}

# Kueue exits at start unless the apiserver's /version is a semantic version; a kube-apiserver
# built by an older hack/build-tools.sh (before it stamped the version) reports
# v0.0.0-master+$Format:%H$. Said here, instead of a line deep in kueue.log.
kueue_check_server_version() {
  local version
  version="$(kubectl get --raw /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')"
  [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$ ]] ||
    die "the apiserver reports version '$version', which Kueue cannot parse: run" \
      "hack/build-tools.sh (it stamps the version), then restart the cluster"
}

# CRDs first (server-side: some are larger than client-side apply's annotation allows), then
# the rest; the webhooks answer only once Kueue runs, and nothing calls them before then.
kueue_install() {
  kueue_check_server_version
  kubectl apply --server-side --force-conflicts -f "$(kueue_module_dir)/crd/bases" >/dev/null
  kubectl wait --for=condition=Established --timeout=60s \
    -f "$(kueue_module_dir)/crd/bases" >/dev/null
  kueue_manifests >"$STATE/kueue/manifests.yaml"
  kubectl apply --server-side --force-conflicts -f "$STATE/kueue/manifests.yaml" >/dev/null
  # A year: the token must outlive any cluster a developer keeps running.
  write_service_account_kubeconfig "$KUEUE_NS" "$KUEUE_SA" 8760h "$STATE/kueue/kubeconfig" ||
    die "TokenRequest for $KUEUE_NS/$KUEUE_SA failed"
}

kueue_start() {
  KUBECONFIG="$STATE/kueue/kubeconfig" POD_NAMESPACE="$KUEUE_NS" setsid nohup \
    "$TOOLS_BIN/kueue" --config "$STATE/kueue/config.yaml" \
    >>"$STATE/logs/kueue.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/kueue"
}

# readyz answers 200 once the webhook server serves and the caches synced.
kueue_ready() {
  curl -sf --max-time 2 "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz" >/dev/null 2>&1
}

# kueue_up: Kueue running and ready beside the running cluster; a running, ready one is kept.
# A fresh start gets new ports and certificates and re-applies every manifest (apply is
# idempotent), so the webhook configurations always point at the process that runs. A start
# whose process exits before it is ready is tried again with new ports, up to three times:
# the ports are free when chosen but not held until Kueue binds them seconds later, and on a
# busy machine another process can take one (a CI run's Kueue exited 6 s into a restart and
# every later wait of that cluster gave up on the dead process).
kueue_up() {
  kueue_ensure_built
  if [[ -f "$STATE/kueue-ports.env" ]] && component_alive kueue; then
    kueue_load_ports
    if kueue_ready; then
      log "kueue is already running (pid $(cat "$STATE/pids/kueue"))"
      return 0
    fi
  fi
  stop_component kueue
  local started=$SECONDS try
  mkdir -p "$STATE/kueue"
  for try in 1 2 3; do
    local log_size; log_size="$(stat -c %s "$STATE/logs/kueue.log" 2>/dev/null || echo 0)"
    kueue_configure_and_start
    if kueue_wait_ready; then
      log "kueue up in $((SECONDS - started))s (webhooks https://127.0.0.1:$KUEUE_WEBHOOK_PORT," \
        "health :$KUEUE_HEALTH_PORT)"
      return 0
    fi
    log "kueue exited before it was ready (try $try of 3); the last lines it wrote:"
    tail -c +$((log_size + 1)) "$STATE/logs/kueue.log" | tail -n 15 >&2 || true
  done
  die "kueue exited before it was ready three times (log: $STATE/logs/kueue.log)"
}

# New ports, certificates and config; the manifests applied with them; the process started.
kueue_configure_and_start() {
  kueue_allocate_ports
  kueue_certs
  kueue_metrics_certs
  kueue_write_config
  (
    export KUBECONFIG="$STATE/admin.kubeconfig" PATH="$TOOLS_BIN:$PATH"
    # shellcheck source=hack/lib/sa-kubeconfig.sh
    source "$REPO_ROOT/hack/lib/sa-kubeconfig.sh"
    kueue_install
  )
  kueue_start
}

# kueue_wait_ready: 0 once readyz answers; 1 when the process exited first (its pid file is
# removed, so a dead Kueue is "stopped" to `status` and to every later wait_until); dies after
# 180 s of a live process that is not ready, or at once when another component died.
kueue_wait_ready() {
  local deadline=$((SECONDS + 180))
  local dead
  until kueue_ready; do
    dead="$(dead_component)"
    if [[ "$dead" == kueue ]]; then
      rm -f "$STATE/pids/kueue"
      return 1
    fi
    if [[ -n "$dead" ]] || ((SECONDS >= deadline)); then break; fi
    sleep 0.2
  done
  wait_until "kueue readyz (log: $STATE/logs/kueue.log)" 0 kueue_ready
}

# After `restart apiserver|etcd`: a running Kueue is restarted too. Its informers outlive the
# outage but back off while the apiserver is down and while it answers 403 before its RBAC cache
# has synced (client-go's reflector: up to 30 s a try, with jitter); Workloads created in the
# 1-2 minutes after a restart went unseen (measured here). A fresh Kueue is ready in ~8 s.
kueue_follow_restart() {
  component_alive kueue || return 0
  log "restarting kueue too (its informers lag an apiserver restart by a minute or more)"
  stop_component kueue
  kueue_up
}

kueue_status() {
  if component_alive kueue; then
    kueue_load_ports
    echo "kueue running (pid $(cat "$STATE/pids/kueue"), webhook 127.0.0.1:$KUEUE_WEBHOOK_PORT)"
  elif [[ -f "$STATE/kueue-ports.env" ]]; then echo "kueue stopped"
  else echo "kueue not installed"; fi
}
