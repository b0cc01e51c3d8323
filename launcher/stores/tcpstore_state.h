#pragma once
// The key-value semantics of torch's TCPStore server, without sockets: keys and values, counters
// kept as decimal strings (torch parses them back with stoll), blocked WAITs that complete when
// their last missing key appears, and FIFO queues. Mirrors TCPStoreLibUvBackend.cpp so torch's
// client (and torchelastic's rendezvous on top of it) cannot tell the difference.
//
// One deliberate difference: a blocking queue_pop is two requests in torch's client (WAIT on the
// queue, then QUEUE_POP), and torch's server lets a third client take the item between them, so
// the woken client gets QueueEmptyError. Here the WAIT that lets a client through reserves it an
// item: other clients see only unreserved items (in WAIT, CHECK and POP), and the reservation
// ends with that client's next request (its pop takes the item; anything else, or a closed
// connection, hands the item to the next waiter).
//
// Bounded (issue 18): what the store holds (keys, values and queue items, each counted with a
// fixed per-entry overhead) stays under `max_stored_bytes`, one value under `max_value_bytes`
// (APPEND cannot grow one past it), one reply under `max_reply_bytes` (a MULTI_GET naming one
// big value 100,000 times is refused, not built), and a connection has at most one WAIT pending
// (torch's client blocks on its WAIT; a second one could only pile up waiters). A request
// beyond a bound is refused: Handle returns false and the server closes the connection, as the
// libuv server does on a protocol error. ADD refuses to overflow int64 the same way.
//
// Not thread-safe: the TcpStoreServer drives it from its one loop thread.

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "launcher/stores/store_transport.h"
#include "launcher/stores/tcpstore_codec.h"

namespace lockstep::launcher::stores {

struct Reply {
  ConnId conn;
  std::string bytes;
};

struct StoreLimits {
  size_t max_stored_bytes = 256 * 1024 * 1024;
  size_t max_value_bytes = 32 * 1024 * 1024;
  size_t max_reply_bytes = 32 * 1024 * 1024;
};

class TcpStoreState {
 public:
  explicit TcpStoreState(StoreLimits limits = {}) : limits_(limits) {}

  // Applies one request from `conn`, appending the replies it causes (to `conn`, and to clients
  // whose WAIT it completes). Returns false on a request that must close the connection
  // (refusal() says why): anything before VALIDATE, a wrong magic number, ADD on a value that is
  // not a number or past INT64_MAX/MIN, a second pending WAIT, or a request beyond the limits.
  bool Handle(ConnId conn, const Request& req, std::vector<Reply>* replies);
  // Why the last Handle returned false.
  const std::string& refusal() const { return refusal_; }
  // Forgets the connection, any WAIT it had pending and any queue item reserved for it (which may
  // complete another client's WAIT: its reply is appended).
  void Disconnect(ConnId conn, std::vector<Reply>* replies);

  bool IsValidated(ConnId conn) const { return validated_.contains(conn); }
  size_t num_keys() const { return kv_.size(); }
  size_t num_waiting() const { return waiting_.size(); }
  size_t num_reserved() const { return reservation_.size(); }
  // What the store holds, as counted against max_stored_bytes.
  size_t stored_bytes() const { return stored_bytes_; }

 private:
  // Refuses (false, refusal_ set) unless the store can take `added` more bytes.
  bool Admit(size_t added, std::string_view what);
  bool Refuse(std::string why);
  // Stores `value` under `key`, keeping stored_bytes_; false (nothing changed) beyond the limits.
  bool Put(const std::string& key, std::string value);
  bool Set(const std::string& key, std::string value, std::vector<Reply>* replies);
  bool HandleAdd(const Request& req, std::string* out, std::vector<Reply>* replies);
  bool HandleMultiGet(const Request& req, std::string* out);
  void WakeAll(const std::string& key, std::vector<Reply>* replies);
  void WakeOne(const std::string& key, std::vector<Reply>* replies);
  bool Ready(const std::string& key) const;
  bool Wait(ConnId conn, const std::vector<std::string>& keys);
  bool HandleKeyOp(ConnId conn, const Request& req, std::string* out, std::vector<Reply>* replies);
  bool HandleQueueOp(ConnId conn, const Request& req, std::string* out,
                     std::vector<Reply>* replies);
  size_t Unreserved(const std::string& queue) const;
  void Reserve(ConnId conn, const std::string& queue);
  // Ends `conn`'s reservation; true if it held one on `queue`.
  bool EndReservation(ConnId conn, const std::string& queue);
  // Ends a reservation the request does not use and offers its item to the next waiter.
  void ReleaseUnusedReservation(ConnId conn, const Request& req, std::vector<Reply>* replies);

  StoreLimits limits_;
  std::string refusal_;
  size_t stored_bytes_ = 0;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::set<ConnId> validated_;
  // conn -> keys its WAIT still misses; key -> conns waiting on it, in arrival order.
  std::map<ConnId, std::set<std::string>> waiting_;
  std::unordered_map<std::string, std::vector<ConnId>> waiters_by_key_;
  // conn -> the queue holding an item for its next QUEUE_POP.
  std::map<ConnId, std::string> reservation_;
};

}  // namespace lockstep::launcher::stores
