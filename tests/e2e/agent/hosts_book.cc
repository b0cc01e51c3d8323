#include "tests/e2e/agent/hosts_book.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep::e2e {
namespace {

std::string Names(const HostsEntry& e, bool same_namespace) {
  if (e.subdomain.empty()) return e.hostname;
  const std::string base = e.hostname + "." + e.subdomain + "." + e.namespace_;
  std::string names = base + ".svc.cluster.local " + base + ".svc " + base;
  if (same_namespace) names += " " + e.hostname + "." + e.subdomain + " " + e.hostname;
  return names;
}

Status WriteInPlace(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError("open " + path + ": " + strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return InternalError("write " + path + ": " + strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return Status::Ok();
}

}  // namespace

std::string RenderHosts(const HostsEntry& self, const std::vector<HostsEntry>& peers) {
  std::string out =
      "# Written by lockstep-test-node-agent: the job's pod DNS names.\n"
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n";
  out += self.ip + "\t" + Names(self, true) + "\n";
  for (const auto& peer : peers) {
    if (peer.ip == self.ip) continue;
    out += peer.ip + "\t" + Names(peer, peer.namespace_ == self.namespace_) + "\n";
  }
  return out;
}

Status HostsBook::Add(const std::string& pod_key, HostsEntry entry, std::string file) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string ns = entry.namespace_;
  const std::string subdomain = entry.subdomain;
  items_[pod_key] = Item{std::move(entry), std::move(file)};
  return RewriteGroup(ns, subdomain);
}

void HostsBook::Remove(const std::string& pod_key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(pod_key);
  if (it == items_.end()) return;
  const HostsEntry gone = it->second.entry;
  items_.erase(it);
  // A peer's stale line would only point at a torn-down address; refreshing is best effort.
  RewriteGroup(gone.namespace_, gone.subdomain).IgnoreError();
}

Status HostsBook::RewriteGroup(const std::string& ns, const std::string& subdomain) {
  std::vector<const Item*> group;
  std::vector<HostsEntry> peers;
  for (const auto& [key, item] : items_) {
    if (item.entry.namespace_ != ns || item.entry.subdomain != subdomain) continue;
    group.push_back(&item);
    if (!subdomain.empty()) peers.push_back(item.entry);
  }
  Status first_error;
  for (const Item* item : group) {
    Status s = WriteInPlace(item->file, RenderHosts(item->entry, peers));
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  return first_error;
}

}  // namespace lockstep::e2e
