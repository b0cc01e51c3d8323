# Agent nodes of a local cluster: lockstep-test-node-agent (docs/e2e.md) plays Nodes whose pods
# really run, as processes in per-pod network namespaces on this machine. hack/demo.sh starts it;
# hack/cluster.sh down stops it and checks that nothing it created survives. Sourced by both;
# needs $STATE (the cluster's state dir) and root (namespaces, a bridge, mounts), through sudo
# when not root.
# shellcheck shell=bash

# Derived from the cluster's name, so `down` finds them without state of its own and two clusters'
# agents never share a bridge. The bridge name must fit 8 characters (veths are <bridge>-<6 hex>);
# the /24 sits outside 10.213.0.0/16, which the e2e tests draw theirs from.
agent_settings() {
  local hash; hash="$(printf '%s' "$CLUSTER_NAME" | md5sum | cut -c1-5)"
  AGENT_BRIDGE="lsd$hash"
  AGENT_SUBNET="10.214.$((16#${hash:0:2})).0/24"
  AGENT_STATE_DIR="$STATE/agent"
  AGENT_PIDFILE="$STATE/pids/agent"
}

as_root() { if (( EUID == 0 )); then "$@"; else sudo "$@"; fi; }

# The agent's pid: its own record in the state dir ("pid starttime"), else the one `agent_start`
# wrote (sudo's, which relays signals, when not root).
agent_pid() {
  local own; own="$(as_root cat "$AGENT_STATE_DIR/agent.pid" 2>/dev/null | awk '{print $1}')"
  if [[ -n "$own" ]]; then echo "$own"; elif [[ -f "$AGENT_PIDFILE" ]]; then cat "$AGENT_PIDFILE"; fi
}
agent_alive() { local pid; pid="$(agent_pid)"; [[ -n "$pid" ]] && as_root kill -0 "$pid" 2>/dev/null; }

# agent_start NODES BUILD_DIR [AGENT_FLAGS...]: NODES Nodes agent-node-0..NODES-1 with 2 pretend
# GPUs each; pods run the build's launcher and the repo's venv python, and the examples image
# maps to the checkout. Heartbeats every second, so a short --node-lease-grace is safe.
agent_start() {
  local nodes="$1" build="$2"; shift 2
  agent_settings
  mkdir -p "$STATE/logs" "$STATE/pids"
  # Emptied before the start: the redirect below runs in the background child, so the wait
  # for "ready" could otherwise read a previous agent's log.
  : >"$STATE/logs/agent.log"
  local sudo=(); (( EUID == 0 )) || sudo=(sudo)
  # Started directly (not through a function), so $! is the agent (or sudo), not a subshell.
  "${sudo[@]}" setsid nohup "$build/bin/lockstep-test-node-agent" \
    --kubeconfig "$STATE/admin.kubeconfig" --nodes "$nodes" --name-prefix agent-node- --gpus 2 \
    --launcher-binary "$build/bin/lockstep-launcher" --launcher-image lockstep/launcher \
    --python "$REPO_ROOT/.venv/bin/python" --image-map "lockstep/examples=$REPO_ROOT" \
    --state-dir "$AGENT_STATE_DIR" --bridge "$AGENT_BRIDGE" --subnet "$AGENT_SUBNET" \
    --heartbeat-ms 1000 "$@" >"$STATE/logs/agent.log" 2>&1 </dev/null &
  echo $! >"$AGENT_PIDFILE"
  local deadline=$((SECONDS + 60))
  until grep -qx ready "$STATE/logs/agent.log" 2>/dev/null; do
    if ! agent_alive || (( SECONDS >= deadline )); then
      tail -20 "$STATE/logs/agent.log" >&2
      die "the test node agent did not start (log: $STATE/logs/agent.log)"
    fi
    sleep 0.2
  done
}

# The namespaces of the agent's pods, one per line (listing needs no root, so `down` of a cluster
# that never had an agent asks for no password).
agent_netns() { ip netns list 2>/dev/null | awk -v p="$AGENT_BRIDGE-" 'index($1, p) == 1 {print $1}'; }

# "pid starttime" of every process in the agent's pod namespaces, so a check after the agent
# exits can tell a survivor from a reused pid.
agent_pod_processes() {
  local ns pid
  for ns in $(agent_netns); do
    for pid in $(as_root ip netns pids "$ns" 2>/dev/null); do
      echo "$pid $(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null)"
    done
  done
}

# Stops the agent with SIGTERM: it kills every pod, deletes the namespaces, veths, bridge, its
# Nodes and Leases, the mount targets it created and its state dir (docs/e2e.md, "Cleanup
# guarantees"). It needs the API server for the Nodes, so it goes before the control plane. An
# agent that does not exit in 60 s is SIGKILLed and its leftovers are removed here instead.
agent_stop() {
  agent_settings
  agent_pod_processes >"$STATE/agent-pod-processes" 2>/dev/null || true
  if agent_alive; then
    local pid; pid="$(agent_pid)"
    as_root kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 60))
    while as_root kill -0 "$pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
    if as_root kill -0 "$pid" 2>/dev/null; then
      log "the test node agent did not exit in 60 s; killing it and removing what it left"
      as_root kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do as_root kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  rm -f "$AGENT_PIDFILE"
  agent_remove_leftovers
}

# What a SIGKILLed or crashed agent leaves (the next agent would do the same at start-up).
agent_remove_leftovers() {
  local ns pid
  for ns in $(agent_netns); do
    for pid in $(as_root ip netns pids "$ns" 2>/dev/null); do as_root kill -KILL "$pid" 2>/dev/null || true; done
    as_root ip netns delete "$ns" 2>/dev/null || true
  done
  if ip link show "$AGENT_BRIDGE" >/dev/null 2>&1; then as_root ip link delete "$AGENT_BRIDGE" || true; fi
  [[ -d "$AGENT_STATE_DIR" ]] || return 0
  # Mount targets it created on the host (e.g. /lockstep/bin), deepest first; only while empty.
  local path
  while read -r path; do
    if [[ -d "$path" ]]; then as_root rmdir "$path" 2>/dev/null || true
    elif [[ -f "$path" && ! -s "$path" ]]; then as_root rm -f "$path"; fi
  done < <(as_root tac "$AGENT_STATE_DIR/created-paths" 2>/dev/null || true)
  if ! grep -qF " $AGENT_STATE_DIR" /proc/mounts; then as_root rm -rf "$AGENT_STATE_DIR"; fi
}

# Prints one line per thing of the agent still present: its process or any of its pods'
# processes, a network namespace or link of its bridge, a mount under its state dir or of its
# namespaces, the state dir. Fails when there is any.
agent_leftovers() {
  agent_settings
  local found=0 pid start
  if agent_alive; then echo "process $(agent_pid) (the agent)"; found=1; fi
  if [[ -f "$STATE/agent-pod-processes" ]]; then
    while read -r pid start; do
      [[ -n "$pid" && "$(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null)" == "$start" ]] || continue
      echo "process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80))"; found=1
    done <"$STATE/agent-pod-processes"
  fi
  while read -r ns; do [[ -z "$ns" ]] || { echo "netns $ns"; found=1; }; done < <(agent_netns)
  while read -r link; do
    [[ -z "$link" ]] || { echo "link $link"; found=1; }
  done < <(ip -o link show | awk -F': ' -v b="$AGENT_BRIDGE" '{sub(/@.*/, "", $2)} $2 == b || index($2, b "-") == 1 {print $2}')
  while read -r mount; do
    [[ -z "$mount" ]] || { echo "mount $mount"; found=1; }
  done < <(awk -v d="$AGENT_STATE_DIR" -v n="/run/netns/$AGENT_BRIDGE-" \
             'index($2, d) == 1 || index($2, n) == 1 {print $2}' /proc/mounts)
  if [[ -e "$AGENT_STATE_DIR" ]]; then echo "dir $AGENT_STATE_DIR"; found=1; fi
  (( found == 0 ))
}
