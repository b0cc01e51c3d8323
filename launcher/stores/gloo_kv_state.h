#pragma once
// The semantics of Horovod's Gloo rendezvous server (horovod/runner/http/http_server.py,
// RendezvousHandler), without sockets. Keys live in scopes: PUT /<scope>/<key> stores the body,
// GET returns it or 404 while absent (clients poll), and DELETE /<scope>/<rank> marks that rank
// done with the scope. For the scopes the launcher declared (global, local_<host>,
// cross_<local_rank>) the scope is cleared once every member has deleted, so the next
// hvd.init() in the same job starts from a clean scope; other ("ad-hoc") scopes delete the key.
// What the scopes hold (keys and bodies, each with a fixed per-entry overhead) stays under
// `max_stored_bytes`: a PUT beyond it is answered 507 and stores nothing.
// Not thread-safe: the GlooKvServer drives it from its one loop thread.

#include <map>
#include <set>
#include <string>
#include <string_view>

namespace lockstep::launcher::stores {

struct KvResponse {
  int code = 200;
  std::string body;
};

class GlooKvState {
 public:
  // `scope_sizes` maps each declared scope to its member count.
  explicit GlooKvState(std::map<std::string, int> scope_sizes,
                       size_t max_stored_bytes = 256 * 1024 * 1024);

  KvResponse Handle(std::string_view method, std::string_view path, std::string body);

  // Number of keys stored in `scope` (for tests and logs).
  size_t KeysIn(const std::string& scope) const;
  size_t stored_bytes() const { return stored_bytes_; }

 private:
  KvResponse Delete(const std::string& scope, const std::string& key);
  KvResponse Put(const std::string& scope, const std::string& key, std::string body);
  void EraseScope(const std::string& scope);

  std::map<std::string, int> scope_sizes_;
  const size_t max_stored_bytes_;
  size_t stored_bytes_ = 0;
  std::map<std::string, std::map<std::string, std::string>> cache_;
  std::map<std::string, std::set<std::string>> finished_;
};

}  // namespace lockstep::launcher::stores
