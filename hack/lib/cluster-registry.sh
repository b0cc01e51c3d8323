# The local cluster's OCI registry: the CNCF distribution registry (hack/build-registry.sh) on
# https://127.0.0.1:<port>, its certificate signed by the cluster's CA ($STATE/pki/ca.crt), its
# storage in $STATE/registry. `hack/cluster.sh up --registry` starts it and prints
#
#   export LOCKSTEP_REGISTRY=127.0.0.1:<port>
#   export SSL_CERT_FILE=$STATE/registry/ca-bundle.crt   (the system's CAs plus the cluster's)
#   export CURL_CA_BUNDLE=$STATE/registry/ca-bundle.crt  (curl reads its own variable)
#
# so helm, skopeo and curl trust it with no flag, as they trust a public registry:
# `helm install lockstep oci://$LOCKSTEP_REGISTRY/charts/lockstep --version V`. `down` stops it
# with the cluster's other processes (its pid is in $STATE/pids/registry). hack/release.sh
# pushes to it; tests/e2e/release starts one of its own with registry_start.
# Sourced by hack/cluster.sh (needs $STATE, log, die) and by tests.
# shellcheck shell=bash

SYSTEM_CA_BUNDLE="${SYSTEM_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

WITH_REGISTRY=0  # hack/cluster.sh up --registry sets it

# registry_sign_cert DIR CA_DIR HOST: DIR/tls.key and DIR/tls.crt for HOST, 127.0.0.1 and
# localhost, signed by CA_DIR/ca.crt and CA_DIR/ca.key (the cluster's CA).
registry_sign_cert() {
  local dir="$1" ca="$2" host="$3"
  openssl genrsa -out "$dir/tls.key" 2048 2>/dev/null
  openssl req -new -key "$dir/tls.key" -subj "/CN=lockstep-registry" -out "$dir/tls.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=IP:$host,IP:127.0.0.1,DNS:localhost" >"$dir/tls.ext"
  openssl x509 -req -in "$dir/tls.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial \
    -CAserial "$dir/ca.srl" -days 365 -sha256 -extfile "$dir/tls.ext" -out "$dir/tls.crt" \
    2>/dev/null || return 1
  chmod 600 "$dir/tls.key"
  rm -f "$dir/tls.csr" "$dir/tls.ext" "$dir/ca.srl"
  # What clients trust: every CA the system trusts, and the cluster's.
  cat "$SYSTEM_CA_BUNDLE" "$ca/ca.crt" >"$dir/ca-bundle.crt" 2>/dev/null ||
    cp "$ca/ca.crt" "$dir/ca-bundle.crt"
}

# registry_start DIR CA_DIR [HOST [PORT]]: serves DIR/data over TLS on HOST:PORT (default
# 127.0.0.1 and a free port) and waits until /v2/ answers. Writes DIR/config.yml, DIR/address
# (HOST:PORT), DIR/pid, DIR/registry.log, and DIR/certs.d/HOST:PORT/ (the CA and a hosts.toml, for
# a containerd whose registry config_path is DIR/certs.d). The caller stops it by DIR/pid.
registry_start() {
  local dir="$1" ca="$2" host="${3:-127.0.0.1}" port="${4:-}"
  local bin="$LOCKSTEP_CACHE/tools/bin/registry"
  "$REPO_ROOT/hack/build-registry.sh" || return 1  # a second when built
  mkdir -p "$dir/data"
  [[ -n "$port" ]] || port="$(python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  registry_sign_cert "$dir" "$ca" "$host" || { log "could not sign the registry's certificate"; return 1; }
  # Deletes allowed, so a release can be withdrawn; the health check watches the storage.
  cat >"$dir/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
  accesslog: {disabled: true}
storage:
  filesystem: {rootdirectory: $dir/data}
  delete: {enabled: true}
http:
  addr: $host:$port
  tls: {certificate: $dir/tls.crt, key: $dir/tls.key}
  headers: {X-Content-Type-Options: [nosniff]}
health:
  storagedriver: {enabled: true, interval: 10s, threshold: 3}
CONFIG
  # The registry reads REGISTRY_* variables as configuration overrides: none may leak in. It
  # exports OpenTelemetry traces to localhost:4318 unless told not to.
  env -u REGISTRY_HTTP_ADDR -u REGISTRY_STORAGE OTEL_TRACES_EXPORTER=none OTEL_SDK_DISABLED=true \
    setsid "$bin" serve "$dir/config.yml" \
    >"$dir/registry.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  echo "$host:$port" >"$dir/address"
  mkdir -p "$dir/certs.d/$host:$port"
  cp "$ca/ca.crt" "$dir/certs.d/$host:$port/ca.crt"
  printf 'server = "https://%s"\n\n[host."https://%s"]\n  capabilities = ["pull", "resolve"]\n  ca = "%s"\n' \
    "$host:$port" "$host:$port" "$dir/certs.d/$host:$port/ca.crt" >"$dir/certs.d/$host:$port/hosts.toml"
  local deadline=$((SECONDS + 30))
  until curl -fsS --max-time 2 --cacert "$ca/ca.crt" "https://$host:$port/v2/" >/dev/null 2>&1; do
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null || (( SECONDS >= deadline )); then
      tail -20 "$dir/registry.log" >&2
      log "the registry did not start (log: $dir/registry.log)"
      return 1
    fi
    sleep 0.2
  done
}

# The cluster's registry (hack/cluster.sh up --registry): started once, on the port it had before
# when restarted, and its environment printed for eval. It listens on the apiserver's address
# ($API_HOST: loopback, or with kubelet nodes the host's end of their bridge, which they reach).
registry_up() {
  local dir="$STATE/registry" port="" host="${API_HOST:-127.0.0.1}"
  if [[ -f "$STATE/pids/registry" ]] && kill -0 "$(cat "$STATE/pids/registry")" 2>/dev/null; then
    log "registry already serving on $(cat "$dir/address")"
  else
    [[ -f "$dir/address" ]] && port="$(cut -d: -f2 "$dir/address")"
    registry_start "$dir" "$STATE/pki" "$host" "$port" || die "registry failed to start"
    cp "$dir/pid" "$STATE/pids/registry"
    log "registry serving https://$(cat "$dir/address") (certificate from the cluster's CA)"
  fi
  registry_env
}

registry_env() {
  echo "export LOCKSTEP_REGISTRY=$(cat "$STATE/registry/address")"
  echo "export SSL_CERT_FILE=$STATE/registry/ca-bundle.crt"
  echo "export CURL_CA_BUNDLE=$STATE/registry/ca-bundle.crt"
}
