#pragma once
// The lockstep-launcher's environment contract: every flag, its LOCKSTEP_* environment name,
// default and help text, the environment the launcher gives its children, and its exit codes.
// The one definition: the launcher parses its flags from it (launcher/config) and the operator
// builds a pod's environment from it (operator/api/children.cc) and reads exit codes by it
// (failure_policy.cc). Keep it dependency-free (only the standard library) and constexpr.
//
// Precedence: command-line flag, then environment variable, then default.

#include <array>
#include <chrono>
#include <string_view>

namespace lockstep::protocol::contract {

// Failure detection's defaults (--peer-timeout, --heartbeat-interval below, in seconds): a peer
// (or the server) silent for 3 s, i.e. 6 heartbeats missed in a row, is lost. A silent node is
// the common death (power, kernel, cable: no FIN reaches anybody), so this is what a hot spare's
// promotion waits for; 3 s keeps it inside issue 21's 4-s target, while a launcher stalled for up
// to 2.5 s (a scheduling hiccup, a retransmitted segment) is still not a loss. The operator reads
// the same defaults when a template sets neither (controller/peer_loss.h: its fence waits them).
// A test (tests/launcher/unit/config_test.cc) keeps the flag strings and these equal.
inline constexpr std::chrono::milliseconds kDefaultPeerTimeout{3000};
inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{500};

// Environment names of the launcher's inputs.
inline constexpr std::string_view kEnvFramework = "LOCKSTEP_FRAMEWORK";
inline constexpr std::string_view kEnvNnodes = "LOCKSTEP_NNODES";
inline constexpr std::string_view kEnvNodeRank = "LOCKSTEP_NODE_RANK";
inline constexpr std::string_view kEnvNprocPerNode = "LOCKSTEP_NPROC_PER_NODE";
inline constexpr std::string_view kEnvRdzvEndpoint = "LOCKSTEP_RDZV_ENDPOINT";
inline constexpr std::string_view kEnvRdzvId = "LOCKSTEP_RDZV_ID";
inline constexpr std::string_view kEnvTokenFile = "LOCKSTEP_TOKEN_FILE";
inline constexpr std::string_view kEnvToken = "LOCKSTEP_TOKEN";  // value; prefer the file
inline constexpr std::string_view kEnvInsecureNoAuth = "LOCKSTEP_INSECURE_NO_AUTH";
inline constexpr std::string_view kEnvRole = "LOCKSTEP_ROLE";
inline constexpr std::string_view kEnvRoleIndex = "LOCKSTEP_ROLE_INDEX";
inline constexpr std::string_view kEnvAttempt = "LOCKSTEP_ATTEMPT";
inline constexpr std::string_view kEnvMaxRestarts = "LOCKSTEP_MAX_RESTARTS";
inline constexpr std::string_view kEnvFailExitCodes = "LOCKSTEP_FAIL_EXIT_CODES";
inline constexpr std::string_view kEnvHangTimeout = "LOCKSTEP_HANG_TIMEOUT";
inline constexpr std::string_view kEnvHeartbeatFile = "LOCKSTEP_HEARTBEAT_FILE";
inline constexpr std::string_view kEnvAdvertiseAddr = "LOCKSTEP_ADVERTISE_ADDR";
inline constexpr std::string_view kEnvFrameworkPort = "LOCKSTEP_FRAMEWORK_PORT";
inline constexpr std::string_view kEnvMasterPort = "LOCKSTEP_MASTER_PORT";
inline constexpr std::string_view kEnvKvPort = "LOCKSTEP_KV_PORT";
inline constexpr std::string_view kEnvJobName = "LOCKSTEP_JOB_NAME";
inline constexpr std::string_view kEnvTerminationLog = "LOCKSTEP_TERMINATION_LOG";
inline constexpr std::string_view kEnvNcclLibrary = "LOCKSTEP_NCCL_LIBRARY";
inline constexpr std::string_view kEnvPeerTimeout = "LOCKSTEP_PEER_TIMEOUT";
inline constexpr std::string_view kEnvHeartbeatInterval = "LOCKSTEP_HEARTBEAT_INTERVAL";
inline constexpr std::string_view kEnvJoinTimeout = "LOCKSTEP_JOIN_TIMEOUT";
inline constexpr std::string_view kEnvLastCall = "LOCKSTEP_LAST_CALL";
inline constexpr std::string_view kEnvGracePeriod = "LOCKSTEP_GRACE_PERIOD";
inline constexpr std::string_view kEnvLogFormat = "LOCKSTEP_LOG_FORMAT";
inline constexpr std::string_view kEnvSpare = "LOCKSTEP_SPARE";
// The launcher's pod and node (the operator sets them from the downward API: metadata.name,
// spec.nodeName); only reported, in the Join, so node 0 can name a lost member (LostMember).
inline constexpr std::string_view kEnvPodName = "LOCKSTEP_POD_NAME";
inline constexpr std::string_view kEnvNodeName = "LOCKSTEP_NODE_NAME";
inline constexpr std::string_view kEnvPodUid = "LOCKSTEP_POD_UID";  // metadata.uid

// One launcher input. `flag` is empty for env-only inputs (secrets never go on a command line,
// where `ps` shows them). `is_switch` flags take no value.
struct FlagSpec {
  std::string_view flag;
  std::string_view env;
  std::string_view default_value;
  std::string_view help;
  bool is_switch = false;
};

inline constexpr std::array kFlags = {
    FlagSpec{"--framework", kEnvFramework, "generic",
             "pytorch|tensorflow|jax|horovod|ray|nccl|generic: environment given to children"},
    FlagSpec{"--nnodes", kEnvNnodes, "1",
             "N, or MIN:MAX for an elastic round (completes at MAX, or at >= MIN after the "
             "last call)"},
    FlagSpec{"--node-rank", kEnvNodeRank, "0",
             "index of this launcher; 0 hosts the rendezvous server. Ranks follow node rank"},
    FlagSpec{"--nproc-per-node", kEnvNprocPerNode, "1", "processes this launcher starts"},
    FlagSpec{"--rdzv-endpoint", kEnvRdzvEndpoint, "127.0.0.1:29400",
             "HOST:PORT of node 0's rendezvous server (node 0 listens on PORT)"},
    FlagSpec{"--rdzv-id", kEnvRdzvId, "default",
             "run id; launchers of another run are refused"},
    FlagSpec{"--token-file", kEnvTokenFile, "",
             "file holding the per-job rendezvous token (HMAC key; never sent)"},
    FlagSpec{"", kEnvToken, "", "the token itself, when no token file is given"},
    FlagSpec{"--insecure-no-auth", kEnvInsecureNoAuth, "",
             "local use only: run without a token, so any peer that reaches the rendezvous port "
             "may join (without it and without a token the launcher refuses to start); "
             "the variable takes 1|true",
             true},
    FlagSpec{"--role", kEnvRole, "worker", "role of this pod (worker, chief, ps, head, ...)"},
    FlagSpec{"--role-index", kEnvRoleIndex, "0", "index of this pod within its role"},
    FlagSpec{"--attempt", kEnvAttempt, "0",
             "the attempt the operator created this pod for: the first rendezvous round, and "
             "the key joins are made with (a launcher of another attempt is refused)"},
    FlagSpec{"--max-restarts", kEnvMaxRestarts, "0",
             "in-place restarts (new round, new children) before giving up"},
    FlagSpec{"--fail-exit-codes", kEnvFailExitCodes, "",
             "exit codes of a rank that end the job with no in-place restart, e.g. 2,3,10-12 "
             "(the operator passes the codes its FailJob rules match)"},
    FlagSpec{"--hang-timeout", kEnvHangTimeout, "0",
             "seconds without progress (heartbeat file touched, or output) = failure 'hang'; "
             "0 disables"},
    FlagSpec{"--heartbeat-file", kEnvHeartbeatFile, "",
             "progress file; child with local rank L gets <PATH>.<L> and must touch it"},
    FlagSpec{"--advertise-addr", kEnvAdvertiseAddr, "",
             "address peers reach this pod at (default: the host name)"},
    FlagSpec{"--framework-port", kEnvFrameworkPort, "0",
             "port this pod reserves for the framework's own server (TF, Ray)"},
    FlagSpec{"--master-port", kEnvMasterPort, "29500",
             "port of the store/coordinator on node 0 (MASTER_PORT, JAX coordinator)"},
    FlagSpec{"--kv-port", kEnvKvPort, "29501", "port of the Horovod Gloo KV server on node 0"},
    FlagSpec{"--job-name", kEnvJobName, "", "job name, for logs and the termination message"},
    FlagSpec{"--termination-log", kEnvTerminationLog, "/dev/termination-log",
             "where the JSON termination message is written"},
    FlagSpec{"--nccl-library", kEnvNcclLibrary, "libnccl.so.2",
             "NCCL library to dlopen for the unique id; the launcher lives without it"},
    FlagSpec{"--peer-timeout", kEnvPeerTimeout, "3",
             "seconds of silence after which a peer (or the server) counts as lost"},
    FlagSpec{"--heartbeat-interval", kEnvHeartbeatInterval, "0.5",
             "seconds between heartbeats to and from the server"},
    FlagSpec{"--join-timeout", kEnvJoinTimeout, "600",
             "seconds to wait for a round to complete (connect retries included)"},
    FlagSpec{"--last-call", kEnvLastCall, "10",
             "elastic: seconds to wait for more nodes once MIN have joined"},
    FlagSpec{"--grace-period", kEnvGracePeriod, "10",
             "seconds between SIGTERM and SIGKILL when the launcher is stopped by a signal "
             "(the operator passes the pod's terminationGracePeriodSeconds - 1); a stop the "
             "launcher decides itself (a failure in the gang) waits at most 10"},
    FlagSpec{"--log-format", kEnvLogFormat, "text", "text|json"},
    FlagSpec{"--spare", kEnvSpare, "",
             "this pod is a hot spare (spec.failurePolicy.spareReplicas): it joins node 0's "
             "rendezvous as a standby, with no node-rank of its own and no children, until the "
             "server gives it a lost member's node-rank; --role-index is its spare index; the "
             "variable takes 1|true",
             true},
    FlagSpec{"--pod-name", kEnvPodName, "",
             "this launcher's pod, reported to node 0 so it can name a lost member"},
    FlagSpec{"--node-name", kEnvNodeName, "",
             "the node this launcher's pod runs on, reported to node 0 likewise"},
    FlagSpec{"--pod-uid", kEnvPodUid, "", "this launcher's pod's uid, reported to node 0 likewise"},
};

// Environment every child gets (framework adapters add their own on top).
inline constexpr std::string_view kChildRank = "LOCKSTEP_RANK";
inline constexpr std::string_view kChildWorldSize = "LOCKSTEP_WORLD_SIZE";
inline constexpr std::string_view kChildLocalRank = "LOCKSTEP_LOCAL_RANK";
inline constexpr std::string_view kChildLocalWorldSize = "LOCKSTEP_LOCAL_WORLD_SIZE";
inline constexpr std::string_view kChildNodeRank = "LOCKSTEP_NODE_RANK";  // rank in the round
inline constexpr std::string_view kChildNnodes = "LOCKSTEP_NNODES";       // nodes in the round
inline constexpr std::string_view kChildAttempt = "LOCKSTEP_ATTEMPT";
inline constexpr std::string_view kChildRestartCount = "LOCKSTEP_RESTART_COUNT";
inline constexpr std::string_view kChildRunId = "LOCKSTEP_RUN_ID";
inline constexpr std::string_view kChildMasterAddr = "LOCKSTEP_MASTER_ADDR";
inline constexpr std::string_view kChildMasterPort = "LOCKSTEP_MASTER_PORT";
inline constexpr std::string_view kChildNcclUniqueId = "LOCKSTEP_NCCL_UNIQUE_ID";  // 256 hex
inline constexpr std::string_view kChildHeartbeatFile = "LOCKSTEP_HEARTBEAT_FILE";
// Where the trainers append progress lines ({"step":..,"totalSteps":..,"samplesPerSecond":..}):
// one file per pod, in a directory the launcher made; node 0's launcher reports the latest line
// to the operator (status.progress). docs/launcher.md "Progress".
inline constexpr std::string_view kChildProgressFile = "LOCKSTEP_PROGRESS_FILE";

// Exit codes. Otherwise the launcher exits with the code of the first child that failed
// (a child killed by signal n counts as 128+n), or 0 when every child succeeded.
inline constexpr int kExitUsage = 2;          // bad flag or environment value
inline constexpr int kExitPeerLost = 75;      // a peer or the server was lost, or another node
                                              // failed and no restart is left: restart the gang
inline constexpr int kExitHang = 76;          // no progress for --hang-timeout seconds
inline constexpr int kExitRefused = 77;       // rendezvous refused us (token, run id, attempt)
inline constexpr int kExitJoinTimeout = 78;   // the round did not complete in --join-timeout
inline constexpr int kExitInternal = 79;      // the launcher itself failed (spawn, sockets)

}  // namespace lockstep::protocol::contract
