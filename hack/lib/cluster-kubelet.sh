# Real nodes of a local cluster (`hack/cluster.sh up --kubelet-nodes N`, sourced by it and by the
# scripts that run on them): per node a network namespace joined to a host bridge, its own
# containerd (Debian's, runc underneath) with the CNI bridge and host-local plugins, a kubelet and
# a kube-proxy built from the control plane's release; for the cluster a kube-scheduler for every
# pod Lockstep does not place, and CoreDNS serving cluster.local from the apiserver behind the
# kube-dns Service. docs/e2e.md ("Real kubelet nodes") says what each part is and why.
#
# Addresses (one /16 per cluster, chosen from a hash of its name so two clusters coexist):
#   10.K.255.1          the host's end of the node bridge: the apiserver and CoreDNS listen here
#   10.K.255.(10+i)     node i's address (its eth0 in its namespace)
#   10.K.i.0/24         node i's pods (CNI bridge cni0 in the node's namespace, host-local IPAM);
#                       the host routes each node's range to that node
# Node i's state lives in /var/lib/lockstep-nodes/<hash>/n<i> (short: unix socket paths must fit
# 108 bytes) and its processes run in the cgroup root /lsn-<hash>-n<i> of every v1 hierarchy, so
# one node's kubelet never garbage-collects another's pods and a node can be killed alone.
# Needs root, $STATE, $CLUSTER_NAME, $TOOLS_BIN and hack/lib/cluster-components.sh.
# shellcheck shell=bash

KUBELET_NODE_PREFIX="kubelet-node-"
KUBELET_CLUSTER_DNS_IP="10.96.0.10"
KUBELET_SERVICE_CIDR="10.96.0.0/16"
KUBELET_GPUS_PER_NODE="${KUBELET_GPUS_PER_NODE:-2}"
# The host sysctls a kubelet sets to its liking at start unless protectKernelDefaults (which
# would instead refuse to start on a host that differs): saved before the first node of the
# machine starts and put back when the last one is gone.
KUBELET_HOST_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
KUBELET_SYSCTL_SAVE=/var/lib/lockstep-nodes/host-sysctls

kubelet_settings() {
  local hash; hash="$(printf '%s' "$CLUSTER_NAME" | md5sum | cut -c1-5)"
  KUBELET_HASH="$hash"
  KUBELET_BRIDGE="lsk$hash"
  KUBELET_ROOT="/var/lib/lockstep-nodes/$hash"
  # The second octet: chosen free when the network comes up (kubelet_network_up), then read back.
  KUBELET_OCTET="$(cat "$STATE/run/kubelet-octet" 2>/dev/null || echo $((64 + 16#${hash:0:2} % 64)))"
  KUBELET_NET="10.$KUBELET_OCTET"
  KUBELET_HOST_IP="$KUBELET_NET.255.1"
}

# kubelet_free_octet: the first second octet in 64..127, from the one this cluster's name hashes
# to, whose 10.K.0.0/16 no interface or route of this machine uses yet.
kubelet_free_octet() {
  local start=$((64 + 16#${KUBELET_HASH:0:2} % 64)) n k used
  used="$({ ip -o -4 addr show | awk '{print $4}'; ip -4 route show | awk '{print $1}'; } |
    awk -F. '$1 == "10" {print $2}' | sort -u)"
  for ((n = 0; n < 64; n++)); do
    k=$((64 + (start - 64 + n) % 64))
    grep -qx "$k" <<<"$used" || { echo "$k"; return 0; }
  done
  die "no free 10.K.0.0/16 (K in 64..127) left for kubelet nodes"
}

kubelet_node_name() { echo "$KUBELET_NODE_PREFIX$1"; }
kubelet_node_ip() { echo "$KUBELET_NET.255.$((10 + $1))"; }
kubelet_node_dir() { echo "$KUBELET_ROOT/n$1"; }
kubelet_netns() { echo "$KUBELET_BRIDGE-n$1"; }
kubelet_cgroup_root() { echo "/lsn-$KUBELET_HASH-n$1"; }
kubelet_sock() { echo "$(kubelet_node_dir "$1")/containerd.sock"; }
# The cgroup v1 hierarchies the kubelet's cgroupfs driver checks and uses (cpu and cpuacct may be
# joined), the named systemd one included: the kubelet refuses a cgroup root missing from any.
kubelet_cgroup_hierarchies() {
  awk '$3 == "cgroup" {print $2}' /proc/mounts | sort -u
}

# kubelet_network_up: the host bridge and forwarding. The apiserver binds to the bridge's
# address, so this runs before it starts.
kubelet_network_up() {
  kubelet_settings
  # A bridge of this name is an earlier run's of this cluster that was not taken down.
  ip link delete "$KUBELET_BRIDGE" 2>/dev/null || true
  mkdir -p "$STATE/run"
  kubelet_free_octet >"$STATE/run/kubelet-octet"
  kubelet_settings
  ip link add "$KUBELET_BRIDGE" type bridge
  ip addr add "$KUBELET_HOST_IP/24" dev "$KUBELET_BRIDGE"
  ip link set "$KUBELET_BRIDGE" up
  sysctl -qw net.ipv4.ip_forward=1
}

# kubelet_pki: client certificates of the cluster-wide parts (scheduler, kube-proxy, CoreDNS).
kubelet_pki() {
  sign_cert kube-scheduler "/CN=system:kube-scheduler"
  sign_cert kube-proxy "/CN=system:kube-proxy"
  sign_cert coredns "/CN=lockstep:coredns"
  write_kubeconfig "$STATE/kube-scheduler.kubeconfig" kube-scheduler
  write_kubeconfig "$STATE/kube-proxy.kubeconfig" kube-proxy
  write_kubeconfig "$STATE/coredns.kubeconfig" coredns
}

# start_host_process NAME COMMAND...: like start_component, for the kubelet tier's processes
# (their command lines are built here, not in component_args). NETNS=ns runs it in a node's
# network namespace only (nsenter --net, not `ip netns exec`, whose private mount namespace would
# hide the kubelet's volume mounts from containerd).
start_host_process() {
  local name="$1"; shift
  local enter=()
  [[ -z "${NETNS:-}" ]] || enter=(nsenter "--net=/run/netns/$NETNS")
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid nohup "${enter[@]}" sh -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec "$@"' \
    "${NICE:-0}" "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name"
}

kubelet_scheduler_start() {
  cat >"$STATE/run/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: $STATE/kube-scheduler.kubeconfig}
leaderElection: {leaderElect: false}
EOF
  NICE=-10 start_host_process kube-scheduler "$TOOLS_BIN/kube-scheduler" \
    --config "$STATE/run/kube-scheduler.yaml" --authentication-kubeconfig \
    "$STATE/kube-scheduler.kubeconfig" --authorization-kubeconfig "$STATE/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --v 0
}

# kubelet_dns_up: CoreDNS on the host's bridge address, and the kube-dns Service (10.96.0.10)
# with an EndpointSlice naming it, so every pod's resolver reaches it through kube-proxy as on
# any cluster. It runs on the host rather than as a pod so that no node's death takes DNS away.
kubelet_dns_up() {
  kubectl_admin apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "lockstep:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "lockstep:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "lockstep:coredns"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "lockstep:coredns"}]
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  clusterIP: $KUBELET_CLUSTER_DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: lockstep.dev-cluster-sh}
addressType: IPv4
endpoints:
- addresses: ["$KUBELET_HOST_IP"]
  conditions: {ready: true}
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
EOF
  cat >"$STATE/run/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $KUBELET_HOST_IP
    errors
    health $KUBELET_HOST_IP:$COREDNS_HEALTH_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE/coredns.kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
.:53 {
    bind $KUBELET_HOST_IP
    errors
    template ANY ANY { rcode NXDOMAIN }
}
EOF
  NICE=-10 start_host_process coredns "$TOOLS_BIN/coredns" -conf "$STATE/run/Corefile"
}

kubectl_admin() { KUBECONFIG="$STATE/admin.kubeconfig" "$TOOLS_BIN/kubectl" "$@"; }

# kubelet_node_network I: node I's namespace, its veth to the host bridge, its routes.
kubelet_node_network() {
  local i="$1" ns; ns="$(kubelet_netns "$i")"
  local host_veth="$KUBELET_BRIDGE$i" ip; ip="$(kubelet_node_ip "$i")"
  ip netns add "$ns"
  ip link add "$host_veth" type veth peer name eth0 netns "$ns"
  ip link set "$host_veth" master "$KUBELET_BRIDGE" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$KUBELET_HOST_IP"
  ip route replace "$KUBELET_NET.$i.0/24" via "$ip"
  # Pods on one node's bridge reach each other's Services through kube-proxy's iptables rules
  # only when bridged traffic is seen by iptables (as kubeadm's preflight asks).
  ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
}

# kubelet_node_files I: node I's certificates, kubeconfigs, containerd, CNI, kubelet and
# kube-proxy configurations.
kubelet_node_files() {
  local i="$1" name dir ip pki="$STATE/pki"
  name="$(kubelet_node_name "$i")" dir="$(kubelet_node_dir "$i")" ip="$(kubelet_node_ip "$i")"
  mkdir -p "$dir"/{containerd/root,containerd/state,runc,cni/net.d,cni/ipam,kubelet,pod-logs,opt}
  # The Node authorizer knows a kubelet by system:node:<name> in system:nodes; the apiserver
  # checks the kubelet's serving certificate against the cluster CA (--kubelet-certificate-authority).
  sign_cert "node-$i" "/O=system:nodes/CN=system:node:$name"
  sign_cert "node-$i-serving" "/CN=system:node:$name" "IP:$ip,DNS:$name"
  write_kubeconfig "$dir/kubelet.kubeconfig" "node-$i"
  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$KUBELET_PAUSE_IMAGE"
  # These machines lack CAP_SYS_RESOURCE: without it runc cannot lower a container's
  # oom_score_adj below its parent's and every sandbox fails to start.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "$dir/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
  # The local registry's CA (hack/lib/cluster-registry.sh writes certs.d/<host:port>/ there
  # when the cluster runs one), so nodes pull from it over verified TLS.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$STATE/registry/certs.d"
EOF
  cat >"$dir/cni/net.d/10-lockstep.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "lockstep",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam",
              "ranges": [[{"subnet": "$KUBELET_NET.$i.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  : >"$dir/resolv.conf"
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/node-$i-serving.crt
tlsPrivateKeyFile: $pki/node-$i-serving.key
containerRuntimeEndpoint: unix://$dir/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $(kubelet_cgroup_root "$i")
failSwapOn: false
failCgroupV1: false
clusterDNS: [$KUBELET_CLUSTER_DNS_IP]
clusterDomain: cluster.local
resolvConf: $dir/resolv.conf
podLogsDir: $dir/pod-logs
serializeImagePulls: false
# A Lease renewed every second (a quarter of its duration), as the agent nodes heartbeat, so
# the operator's short grace in the demo and the tests judges a live kubelet alive.
nodeLeaseDurationSeconds: 4
nodeStatusUpdateFrequency: 4s
# The development disk is shared with builds and caches: evict only when it is really full.
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
  cat >"$dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
hostnameOverride: $name
bindAddress: $ip
mode: iptables
clusterCIDR: $KUBELET_NET.0.0/16
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# A network namespace's nf_conntrack_max is read-only: leave conntrack as the host set it (kind
# does the same).
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# kubelet_node_cgroups I: node I's cgroup root in every v1 hierarchy (cpuset needs cpus and mems
# before a task may join it).
kubelet_node_cgroups() {
  local root h; root="$(kubelet_cgroup_root "$1")"
  for h in $(kubelet_cgroup_hierarchies); do
    mkdir -p "$h$root"
    if [[ -f "$h/cpuset.cpus" ]]; then
      cat "$h/cpuset.cpus" >"$h$root/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$root/cpuset.mems"
    fi
  done
}

# kubelet_node_start I: containerd, the images every node holds, kubelet, kube-proxy.
kubelet_node_start() {
  local i="$1" dir name; dir="$(kubelet_node_dir "$i")" name="$(kubelet_node_name "$i")"
  NETNS="$(kubelet_netns "$i")" start_host_process "containerd-$i" /usr/bin/containerd \
    --config "$dir/containerd.toml"
  wait_until "containerd of $name" 60 ctr_node "$i" version
  kubelet_node_import_images "$i"
  NETNS="$(kubelet_netns "$i")" start_host_process "kubelet-$i" "$TOOLS_BIN/kubelet" \
    --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" --root-dir "$dir/kubelet" \
    --hostname-override "$name" --node-ip "$(kubelet_node_ip "$i")" \
    --node-labels "lockstep.dev/kubelet-node=true,topology.lockstep.dev/block=block-0,topology.lockstep.dev/rack=block-0-rack-$((i / 2))" \
    --v 1
  NETNS="$(kubelet_netns "$i")" start_host_process "kube-proxy-$i" "$TOOLS_BIN/kube-proxy" \
    --config "$dir/kube-proxy.yaml" --v 1
}

ctr_node() { local i="$1"; shift; ctr --address "$(kubelet_sock "$i")" -n k8s.io "$@" >/dev/null 2>&1; }

# The images every kubelet node holds, as a cluster pulling from a registry would have them: the
# pause image, and every docker archive `hack/cluster.sh load-images` listed in
# $STATE/run/node-images (a node started later, or again after its death, imports them too).
kubelet_node_import_images() {
  local i="$1" archive
  for archive in "$KUBELET_PAUSE_ARCHIVE" "$KUBELET_NETPOL_ARCHIVE" \
      $(cat "$STATE/run/node-images" 2>/dev/null); do
    kubelet_import "$i" "$archive"
  done
}

kubelet_import() {
  local i="$1" archive="$2"
  if [[ -d "$archive" ]]; then kubelet_import_layout "$i" "$archive"; return; fi
  [[ -f "$archive" ]] || die "no image archive $archive"
  ctr --address "$(kubelet_sock "$i")" -n k8s.io images import "$archive" \
    >>"$STATE/logs/containerd-$i.log" 2>&1 || die "node $i: importing $archive failed"
}

# kubelet_import_layout I LAYOUT: an OCI layout into node I's containerd. With the tree its one
# layer packs beside it (LAYOUT.rootfs: hack/build-images.sh's examples images), the layer is
# neither written nor unpacked again: only the manifest and configuration are imported, the
# layer's snapshot is prepared, filled with hard links to the tree and committed under the
# layer's chain ID, and the configuration carries the label containerd's own unpack sets, so the
# image is unpacked as far as the CRI plugin and the garbage collector are concerned (as with the
# CRI's discard_unpacked_layers, the layer blob is not kept). overlayfs mounts the snapshot as a
# read-only lower layer: containers write to their own upper layer, never through the links.
# This makes loading PyTorch's 5.4 GB image a few seconds per node instead of ~11 GB written.
# Without the tree, the whole layout goes through `ctr images import`.
kubelet_import_layout() {
  local i="$1" layout="$2" log="$STATE/logs/containerd-$1.log"
  local c=(ctr --address "$(kubelet_sock "$1")" -n k8s.io)
  [[ -f "$layout/index.json" ]] || die "$layout is not an OCI image layout"
  if [[ ! -d "$layout.rootfs" ]]; then
    tar -C "$layout" -cf - . | "${c[@]}" images import - >>"$log" 2>&1 ||
      die "node $i: importing $layout failed"
    return 0
  fi
  local layer config
  read -r layer config < <(python3 - "$layout" <<'PY'
import json, os, sys
blob = lambda d: json.load(open(os.path.join(sys.argv[1], "blobs", *d.split(":"))))
index = json.load(open(os.path.join(sys.argv[1], "index.json")))
manifest = blob(index["manifests"][0]["digest"])
if len(manifest["layers"]) != 1 or not manifest["layers"][0]["mediaType"].endswith(".tar"):
    sys.exit("want one uncompressed layer")
print(manifest["layers"][0]["digest"], manifest["config"]["digest"])
PY
  ) || die "$layout: not an image of one uncompressed layer"
  tar -C "$layout" --exclude="./blobs/sha256/${layer#sha256:}" -cf - . |
    "${c[@]}" images import --no-unpack - >>"$log" 2>&1 || die "node $i: importing $layout failed"
  "${c[@]}" snapshots info "$layer" >/dev/null 2>&1 && return 0
  local key="lockstep-load-${layer#sha256:}" fs
  "${c[@]}" snapshots rm "$key" >/dev/null 2>&1 || true
  # A root for the garbage collector until the committed snapshot is the image's.
  "${c[@]}" snapshots prepare "$key" >>"$log" 2>&1 &&
    "${c[@]}" snapshots label "$key" containerd.io/gc.root=loading >/dev/null ||
    die "node $i: preparing a snapshot for $layout failed"
  fs="$("${c[@]}" snapshots mounts /mnt "$key" | awk '$1 == "mount" && $3 == "bind" {print $4}')"
  [[ -d "$fs" ]] || die "node $i: no directory for snapshot $key (got '$fs')"
  cp -al "$layout.rootfs/." "$fs/" || die "node $i: linking $layout.rootfs into $fs failed"
  "${c[@]}" content label "$config" "containerd.io/gc.ref.snapshot.overlayfs=$layer" >/dev/null &&
    "${c[@]}" snapshots commit "$layer" "$key" >>"$log" 2>&1 ||
    die "node $i: committing the snapshot of $layout failed"
}

kubelet_node_alive() { component_alive "kubelet-$1" && component_alive "containerd-$1"; }

# kubelet_load_images ARCHIVE...: remembered for nodes started later, imported into every live
# node now (one node after another: each import unpacks every layer on the node's disk).
kubelet_load_images() {
  kubelet_settings
  local archive i n; n="$(cat "$STATE/run/kubelet-nodes" 2>/dev/null || echo 0)"
  (( n > 0 )) || die "cluster '$CLUSTER_NAME' has no kubelet nodes (up --kubelet-nodes N)"
  local started=$SECONDS pids=() rc=0 pid
  for archive in "$@"; do
    grep -qxF "$archive" "$STATE/run/node-images" 2>/dev/null || echo "$archive" >>"$STATE/run/node-images"
  done
  # Every node at once, each node's archives in turn: a node's import is mostly its own disk
  # writes (the layer blob, then its unpacked snapshot).
  for ((i = 0; i < n; i++)); do
    kubelet_node_alive "$i" || continue
    ( for archive in "$@"; do kubelet_import "$i" "$archive"; done ) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  (( rc == 0 )) || die "importing images into the kubelet nodes failed (logs: $STATE/logs/containerd-*.log)"
  log "loaded $# images into the kubelet nodes in $((SECONDS - started)) s"
}

# kubelet_nodes_match: on a running cluster, `up --kubelet-nodes N` starts again any of its N
# nodes that died (kill-node), from a clean state; a cluster started without kubelet nodes
# cannot gain them (its apiserver listens on loopback only).
kubelet_nodes_match() {
  (( KUBELET_NODES > 0 )) || return 0
  local have; have="$(cat "$STATE/run/kubelet-nodes" 2>/dev/null || echo 0)"
  (( have > 0 )) || die "cluster '$CLUSTER_NAME' runs without kubelet nodes: hack/cluster.sh down --name $CLUSTER_NAME first"
  (( KUBELET_NODES == have )) || die "cluster '$CLUSTER_NAME' has $have kubelet nodes, not $KUBELET_NODES"
  kubelet_settings
  kubelet_system_images
  local i revived=0
  component_alive kube-scheduler || kubelet_scheduler_start
  component_alive coredns || kubelet_dns_up
  for ((i = 0; i < KUBELET_NODES; i++)); do
    kubelet_node_alive "$i" && continue
    log "starting $(kubelet_node_name "$i") again"
    kubelet_kill_node "$i"
    kubelet_node_remove "$i"
    kubelet_node_files "$i"
    kubelet_node_network "$i"
    kubelet_node_cgroups "$i"
    kubelet_node_start "$i"
    revived=1
  done
  (( revived == 0 )) && return 0
  wait_until "$KUBELET_NODES kubelet nodes Ready" 120 kubelet_nodes_all_ready
  for ((i = 0; i < KUBELET_NODES; i++)); do kubelet_advertise_gpus "$i"; done
}

# kubelet_static_image NAME TAG BINARY USER: a one-file image of the static BINARY at /NAME (its
# entrypoint), running as USER, as a docker archive in the cache keyed by the binary and this
# recipe, packed as hack/build-images.sh packs its images (fixed times, root-owned). Prints the
# archive's path.
kubelet_static_image() {
  local name="$1" tag="$2" binary="$3" user="$4"
  local key; key="$({ sha256sum <"$binary"; declare -f kubelet_static_image; echo "$name $tag $user"; } |
    sha256sum | cut -c1-12)"
  local archive="$LOCKSTEP_CACHE/images/$name-$key.tar"
  if [[ ! -f "$archive" ]]; then
    local work; work="$(mktemp -d)"
    mkdir -p "$(dirname "$archive")"
    umoci init --layout "$work/oci" && umoci new --image "$work/oci:build"
    umoci unpack --image "$work/oci:build" "$work/bundle" >/dev/null
    install -m 0555 "$binary" "$work/bundle/rootfs/$name"
    find "$work/bundle/rootfs" -exec touch -h -d @0 {} +
    umoci repack --image "$work/oci:build" --history.created 1970-01-01T00:00:00Z "$work/bundle"
    umoci config --image "$work/oci:build" --no-history --created 1970-01-01T00:00:00Z \
      --config.user "$user" --config.entrypoint "/$name"
    umoci tag --image "$work/oci:build" "$tag"
    skopeo copy -q "oci:$work/oci:$tag" "docker-archive:$archive.partial:lockstep.local/$name:$tag"
    mv "$archive.partial" "$archive"
    rm -rf "$work"
  fi
  echo "$archive"
}

# kubelet_system_images: the pause image (hack/kubelet/pause.c, built static here: no registry is
# reachable to pull registry.k8s.io/pause) and the NetworkPolicy enforcer's.
kubelet_system_images() {
  local work; work="$(mktemp -d)"
  cc -static -Os -o "$work/pause" "$REPO_ROOT/hack/kubelet/pause.c" && strip "$work/pause"
  KUBELET_PAUSE_IMAGE="lockstep.local/pause:3.10"
  KUBELET_PAUSE_ARCHIVE="$(kubelet_static_image pause 3.10 "$work/pause" 65535:65535)"
  KUBELET_NETPOL_IMAGE="lockstep.local/kube-network-policies:$KUBE_NETWORK_POLICIES_VERSION"
  KUBELET_NETPOL_ARCHIVE="$(kubelet_static_image kube-network-policies \
    "$KUBE_NETWORK_POLICIES_VERSION" "$TOOLS_BIN/kube-network-policies" 0:0)"
  rm -rf "$work"
}

# kubelet_netpol_up: kube-network-policies (the enforcer kind ships) as a DaemonSet on the
# kubelet nodes, with the RBAC of its own install.yaml (read from its module at the version
# built); host network and NET_ADMIN, since it writes each node's nftables rules and answers
# the queued packets.
kubelet_netpol_up() {
  local dir
  dir="$(go mod download -json "sigs.k8s.io/kube-network-policies@$KUBE_NETWORK_POLICIES_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -f "$dir/install.yaml" ]] ||
    die "kube-network-policies $KUBE_NETWORK_POLICIES_VERSION's module has no install.yaml"
  # Its ClusterRole, ClusterRoleBinding and ServiceAccount; the DaemonSet is written here.
  awk '/^---$/ {doc++} doc <= 3' "$dir/install.yaml" | kubectl_admin apply -f - >/dev/null
  kubectl_admin apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-network-policies
  namespace: kube-system
  labels: {app: kube-network-policies}
spec:
  selector:
    matchLabels: {app: kube-network-policies}
  template:
    metadata:
      labels: {app: kube-network-policies}
    spec:
      hostNetwork: true
      serviceAccountName: kube-network-policies
      nodeSelector: {lockstep.dev/kubelet-node: "true"}
      tolerations: [{operator: Exists}]
      priorityClassName: system-node-critical
      containers:
      - name: kube-network-policies
        image: $KUBELET_NETPOL_IMAGE
        imagePullPolicy: Never
        args: ["--hostname-override=\$(NODE_NAME)", --disable-nri, --nfqueue-id=98,
               --metrics-bind-address=127.0.0.1:9080, --v=1]
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        resources:
          requests: {cpu: 10m, memory: 50Mi}
        securityContext:
          privileged: true
          capabilities: {add: [NET_ADMIN]}
EOF
}

kubelet_ready_count() {
  kubectl_admin get nodes -l lockstep.dev/kubelet-node=true --no-headers 2>/dev/null |
    awk '$2 == "Ready" {n++} END {print n + 0}'
}
kubelet_nodes_all_ready() { [[ "$(kubelet_ready_count)" -ge "$KUBELET_NODES" ]]; }

# kubelet_advertise_gpus I: nvidia.com/gpu in node I's capacity, as the Kubernetes docs advertise
# an extended resource (a status patch); the kubelet keeps it and admits pods against it.
kubelet_advertise_gpus() {
  local name; name="$(kubelet_node_name "$1")"
  kubectl_admin patch node "$name" --subresource=status --type=json -p \
    "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"$KUBELET_GPUS_PER_NODE\"}]" \
    >/dev/null
}

kubelet_save_host_sysctls() {
  [[ -f "$KUBELET_SYSCTL_SAVE" ]] && return 0
  mkdir -p "$(dirname "$KUBELET_SYSCTL_SAVE")"
  sysctl "${KUBELET_HOST_SYSCTLS[@]}" | sed 's/ = /=/' >"$KUBELET_SYSCTL_SAVE"
}

# kubelet_nodes_up: the cluster-wide parts, then every node, then waits until all are Ready.
kubelet_nodes_up() {
  (( KUBELET_NODES > 0 )) || return 0
  kubelet_settings
  local started=$SECONDS i
  kubelet_system_images
  kubelet_save_host_sysctls
  kubelet_scheduler_start
  kubelet_dns_up
  for ((i = 0; i < KUBELET_NODES; i++)); do
    kubelet_node_files "$i"
    kubelet_node_network "$i"
    kubelet_node_cgroups "$i"
    kubelet_node_start "$i"
  done
  wait_until "$KUBELET_NODES kubelet nodes Ready" 120 kubelet_nodes_all_ready
  for ((i = 0; i < KUBELET_NODES; i++)); do kubelet_advertise_gpus "$i"; done
  kubelet_netpol_up
  log "$KUBELET_NODES kubelet nodes Ready in $((SECONDS - started)) s"
}

# kubelet_node_processes I: pids of everything node I runs: its containerd, kubelet and
# kube-proxy, the shims of its containers and every process in its cgroup root.
kubelet_node_processes() {
  local i="$1" h root; root="$(kubelet_cgroup_root "$i")"
  local n; for n in "containerd-$i" "kubelet-$i" "kube-proxy-$i"; do
    [[ ! -f "$STATE/pids/$n" ]] || cat "$STATE/pids/$n"
  done
  pgrep -f -- "containerd-shim-runc-v2 .*-address $(kubelet_sock "$i")( |$)" || true
  for h in $(kubelet_cgroup_hierarchies); do
    [[ ! -d "$h$root" ]] || find "$h$root" -name cgroup.procs -exec cat {} + 2>/dev/null || true
  done
}

# kubelet_kill_node I: node I dies at once, as a machine does when its power goes: every process
# of it is killed with SIGKILL in one pass (frozen first, so none of them acts on another's
# death), and its network link is cut, so its pods' addresses stop answering.
kubelet_kill_node() {
  local i="$1" pids round
  kubelet_settings
  # Again until nothing is left: containerd may have forked a shim between the listing and the
  # signals (seen when a node was killed while its pods were starting).
  for round in 1 2 3 4 5 6 7 8 9 10; do
    pids="$(kubelet_node_processes "$i" | sort -u | tr '\n' ' ')"
    [[ -n "${pids// }" ]] || break
    # shellcheck disable=SC2086
    kill -STOP $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    # Their pid files go after the first round: a later round must not signal a reused pid.
    rm -f "$STATE/pids/containerd-$i" "$STATE/pids/kubelet-$i" "$STATE/pids/kube-proxy-$i"
    sleep 0.1
  done
  ip link set "$KUBELET_BRIDGE$i" down 2>/dev/null || true
}

# kubelet_node_remove I: after kubelet_kill_node, everything node I left on the host: mounts
# (deepest first), the pod network namespaces under its state, its namespace, veth, route,
# cgroups and state directory.
kubelet_node_remove() {
  local i="$1" dir h root; dir="$(kubelet_node_dir "$i")" root="$(kubelet_cgroup_root "$i")"
  local mounts
  mounts="$(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | awk '{print length, $0}' |
    sort -rn | cut -d' ' -f2-)"
  local m; for m in $mounts; do umount -l "$m" 2>/dev/null || true; done
  ip netns delete "$(kubelet_netns "$i")" 2>/dev/null || true
  ip link delete "$KUBELET_BRIDGE$i" 2>/dev/null || true
  ip route del "$KUBELET_NET.$i.0/24" 2>/dev/null || true
  for h in $(kubelet_cgroup_hierarchies); do
    [[ -d "$h$root" ]] || continue
    find "$h$root" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$dir"
}

# kubelet_nodes_down: every node killed and removed, the cluster-wide parts stopped, the bridge
# and (when no other cluster's nodes are left) the host's sysctls put back.
kubelet_nodes_down() {
  kubelet_settings
  local i dirs
  dirs="$(ls -d "$KUBELET_ROOT"/n* 2>/dev/null || true)"
  for d in $dirs; do
    i="${d##*/n}"
    kubelet_kill_node "$i"
    kubelet_node_remove "$i"
  done
  stop_component coredns
  stop_component kube-scheduler
  rmdir "$KUBELET_ROOT" 2>/dev/null || true
  ip link delete "$KUBELET_BRIDGE" 2>/dev/null || true
  if [[ -f "$KUBELET_SYSCTL_SAVE" ]] && ! ls -d /var/lib/lockstep-nodes/*/n* >/dev/null 2>&1; then
    sysctl -qw $(cat "$KUBELET_SYSCTL_SAVE") || true
    rm -f "$KUBELET_SYSCTL_SAVE"
  fi
}

# kubelet_leftovers: one line per thing of this cluster's kubelet nodes still on the host; fails
# when there is any (hack/cluster.sh down checks it, as it checks the agent's).
kubelet_leftovers() {
  kubelet_settings
  local found=0 line
  while read -r line; do [[ -z "$line" ]] || { echo "$line"; found=1; }; done < <(
    pgrep -af -- "-address $KUBELET_ROOT/" | sed 's/^/process /'
    ip netns list 2>/dev/null | awk -v p="$KUBELET_BRIDGE-" 'index($1, p) == 1 {print "netns " $1}'
    ip -o link show | awk -F': ' -v b="$KUBELET_BRIDGE" '{sub(/@.*/, "", $2)} index($2, b) == 1 {print "link " $2}'
    awk -v d="$KUBELET_ROOT/" 'index($2, d) == 1 {print "mount " $2}' /proc/mounts
    [[ ! -e "$KUBELET_ROOT" ]] || echo "dir $KUBELET_ROOT"
  )
  (( found == 0 ))
}
