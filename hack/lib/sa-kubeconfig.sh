# shellcheck shell=bash
# A kubeconfig that holds only a bound token of one ServiceAccount, for running a component as a
# process with exactly the rights a chart gives its pod (hack/demo.sh, the Helm RBAC test).
# Sourced; kubectl from PATH against $KUBECONFIG.

# write_service_account_kubeconfig NAMESPACE SERVICE_ACCOUNT DURATION OUT: TokenRequest for the
# account, the current cluster's server and CA (inline data, or the file a kubeconfig names),
# written to OUT readable by the owner only. Fails when the TokenRequest fails.
write_service_account_kubeconfig() {
  local ns="$1" sa="$2" duration="$3" out="$4" token server ca
  token="$(kubectl create token "$sa" -n "$ns" --duration="$duration")" || return 1
  server="$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')"
  ca="$(kubectl config view --minify --raw \
          -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
  if [[ -z "$ca" ]]; then
    local ca_file
    ca_file="$(kubectl config view --minify --raw \
                 -o jsonpath='{.clusters[0].cluster.certificate-authority}')"
    ca="$(base64 -w0 <"$ca_file")"
  fi
  (umask 077 && cat >"$out" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: $sa
  user: {token: "$token"}
contexts:
- name: $sa
  context: {cluster: local, user: $sa}
current-context: $sa
KUBECONFIG
  )
}
