#pragma once
// The world a rendezvous round produces, as every launcher sees it. This is the contract between
// the rendezvous (launcher/rendezvous/, which fills it) and the framework adapters
// (launcher/frameworks/, which turn it into each child's environment and command). Add fields
// freely; rename none without updating both sides.

#include <map>
#include <string>
#include <vector>

namespace lockstep::launcher {

// One launcher (one pod) in the round, indexed by node rank.
struct PeerInfo {
  int node_rank = 0;
  std::string role = "worker";  // "worker", or an extra role: "chief", "ps", "evaluator", "head"
  int role_index = 0;           // index of this pod within its role
  std::string host;             // address peers can reach this pod at (pod DNS name or IP)
  int port = 0;                 // a port this pod reserved for the framework's own server
                                // (TF gRPC server, Ray node manager, ...), free on `host`
  int nproc = 1;                // processes this pod starts (its local world size)
  int first_rank = 0;           // global rank of its local rank 0
};

struct World {
  std::string run_id;           // rendezvous id (the job's uid or name); same on every node
  int attempt = 0;              // rendezvous round; children of attempt N never meet N+1
  int restart_count = 0;        // in-place restarts done so far by this launcher
  int max_restarts = 0;
  std::string framework;        // "pytorch", "tensorflow", "jax", "horovod", "ray", "nccl", "generic"

  int node_rank = 0;            // this pod
  int nnodes = 0;               // pods in the round (all roles)
  int world_size = 0;           // processes in the round (sum of every peer's nproc)
  std::vector<PeerInfo> peers;  // every pod, indexed by node_rank
  // True when `peers` is the full table, which the launcher requests only for frameworks that
  // need every pod (NeedsPeerTable in world_builder.h: TensorFlow, Horovod). Otherwise the
  // world is compact, O(1) per launcher: only self() and peers[0].host are filled in.
  bool peers_complete = false;
  // Processes of pods with this pod's role: before this pod (in node order), and in total. Set
  // in both the compact and the full world (PyTorch's ROLE_RANK, ROLE_WORLD_SIZE); 0 when the
  // producer of the World did not fill them in (hand-built worlds in tests).
  int role_first_rank = 0;
  int role_world_size = 0;

  // Services hosted by node 0's launcher (or by the framework on node 0).
  std::string master_addr;      // node 0's host
  int master_port = 0;          // TCPStore-compatible store (PyTorch), coordinator (JAX)
  int kv_port = 0;              // Horovod Gloo HTTP KV rendezvous

  std::string nccl_unique_id_hex;  // 256 hex chars, empty when NCCL is not loadable
  std::map<std::string, std::string> extra;  // framework-specific values from flags

  const PeerInfo& self() const { return peers.at(static_cast<size_t>(node_rank)); }
};

}  // namespace lockstep::launcher
