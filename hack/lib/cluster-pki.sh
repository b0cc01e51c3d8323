# Ports, certificates and kubeconfigs of a local cluster (sourced by hack/cluster.sh).
# shellcheck shell=bash

# Free loopback ports, chosen once per cluster and kept in $STATE/ports.env so restarts reuse them.
allocate_ports() {
  python3 - >"$STATE/ports.env" <<'PY'
import socket
socks = []
for name in ["ETCD_CLIENT_PORT", "ETCD_PEER_PORT", "APISERVER_PORT", "KCM_PORT", "KWOK_PORT",
             "SCHEDULER_PORT", "COREDNS_HEALTH_PORT"]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    print(f"{name}={s.getsockname()[1]}")
PY
  # Where the apiserver listens: loopback, or with kubelet nodes the host's end of their bridge,
  # which their pods and kubelets can reach (hack/lib/cluster-kubelet.sh).
  echo "API_HOST=${API_HOST:-127.0.0.1}" >>"$STATE/ports.env"
  # shellcheck disable=SC1091
  source "$STATE/ports.env"
}

load_ports() {
  # shellcheck disable=SC1091
  source "$STATE/ports.env"
  API_HOST="${API_HOST:-127.0.0.1}"  # a cluster started before API_HOST was written
}

# sign_cert NAME SUBJECT [SAN]: a key and a certificate signed by the cluster CA.
sign_cert() {
  local name="$1" subject="$2" san="${3:-}"
  local pki="$STATE/pki"
  openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  local ext="$pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n "$san" ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 365 -sha256 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

make_pki() {
  local pki="$STATE/pki"
  openssl genrsa -out "$pki/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=lockstep-local-ca" -days 365 -sha256 \
    -out "$pki/ca.crt" 2>/dev/null
  sign_cert apiserver "/CN=kube-apiserver" \
    "IP:$API_HOST,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1"
  sign_cert admin "/O=system:masters/CN=lockstep-admin"
  # The apiserver's identity towards kubelets (logs, exec): the test node agent checks it
  # against the CA and asks the apiserver whether it may (a SubjectAccessReview), as a kubelet.
  sign_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  sign_cert controller-manager "/CN=system:kube-controller-manager"
  # kwok acts for the fake kubelets; it needs node/lease/pod-status rights across the cluster.
  sign_cert kwok "/O=system:masters/CN=kwok"
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  chmod 600 "$pki"/*.key
}

# write_kubeconfig FILE USER: a kubeconfig with the CA and the user's client cert embedded.
write_kubeconfig() {
  local file="$1" user="$2" pki="$STATE/pki"
  cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: https://$API_HOST:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$user.crt")
    client-key-data: $(base64 -w0 <"$pki/$user.key")
contexts:
- name: $CLUSTER_NAME
  context: {cluster: $CLUSTER_NAME, user: $user, namespace: default}
current-context: $CLUSTER_NAME
KC
  chmod 600 "$file"
}

write_kubeconfigs() {
  write_kubeconfig "$STATE/admin.kubeconfig" admin
  write_kubeconfig "$STATE/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$STATE/kwok.kubeconfig" kwok
}
