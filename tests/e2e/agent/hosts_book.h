#pragma once
// /etc/hosts per pod, standing in for cluster DNS: a pod with hostname H and subdomain S in
// namespace N resolves every known pod of (N, S) as H'.S.N.svc.cluster.local and the shorter
// forms H'.S.N.svc, H'.S.N, H'.S and H'. "Known" means running on any node of this agent; the
// files are rewritten in place (the bind mount pins the inode) as pods come and go.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

struct HostsEntry {
  std::string ip;
  std::string hostname;
  std::string subdomain;  // may be empty: then only the pod's own name resolves
  std::string namespace_;
};

// The file a pod sees (its own entry first, then its peers in name order).
std::string RenderHosts(const HostsEntry& self, const std::vector<HostsEntry>& peers);

class HostsBook {
 public:
  // Registers a pod with an IP and the host file it reads, then rewrites the files of every
  // pod that shares its namespace and subdomain (this one included).
  Status Add(const std::string& pod_key, HostsEntry entry, std::string file);
  void Remove(const std::string& pod_key);

 private:
  struct Item {
    HostsEntry entry;
    std::string file;
  };
  Status RewriteGroup(const std::string& ns, const std::string& subdomain);

  std::mutex mu_;
  std::map<std::string, Item> items_;  // guarded by mu_
};

}  // namespace lockstep::e2e
