#include "launcher/stores/tcpstore_state.h"

#include <algorithm>
#include <charconv>

namespace lockstep::launcher::stores {
namespace {

// What one key, value or queue item costs beyond its bytes (node, hash bucket, string headers),
// so a flood of empty keys is bounded too.
constexpr size_t kEntryOverhead = 64;

size_t EntryBytes(std::string_view key, std::string_view value) {
  return key.size() + value.size() + kEntryOverhead;
}

std::string WaitDone() {
  std::string out;
  PutU8(kWaitStopWaiting, &out);
  return out;
}

}  // namespace

bool TcpStoreState::Refuse(std::string why) {
  refusal_ = std::move(why);
  return false;
}

bool TcpStoreState::Admit(size_t added, std::string_view what) {
  const size_t room = limits_.max_stored_bytes - std::min(stored_bytes_, limits_.max_stored_bytes);
  if (added <= room) return true;
  return Refuse(std::string(what) + " would take the store past " +
                std::to_string(limits_.max_stored_bytes) + " bytes");
}

bool TcpStoreState::Put(const std::string& key, std::string value) {
  if (value.size() > limits_.max_value_bytes) {
    return Refuse("a value of " + std::to_string(value.size()) + " bytes");
  }
  auto it = kv_.find(key);
  const size_t before = it == kv_.end() ? 0 : EntryBytes(key, it->second);
  const size_t after = EntryBytes(key, value);
  if (after > before && !Admit(after - before, "a SET")) return false;
  stored_bytes_ = stored_bytes_ - before + after;
  if (it == kv_.end()) {
    kv_.emplace(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  return true;
}

bool TcpStoreState::Handle(ConnId conn, const Request& req, std::vector<Reply>* replies) {
  if (!validated_.contains(conn)) {
    // The libuv server accepts nothing but VALIDATE as a connection's first request.
    if (req.type != QueryType::kValidate || req.u32 != kValidationMagic) {
      return Refuse("the first request is not VALIDATE with the magic number");
    }
    validated_.insert(conn);
    return true;
  }
  ReleaseUnusedReservation(conn, req, replies);
  std::string out;
  switch (req.type) {
    case QueryType::kValidate:
      if (req.u32 != kValidationMagic) return Refuse("VALIDATE with a wrong magic number");
      return true;
    case QueryType::kPing:
      PutU32(req.u32, &out);
      break;
    case QueryType::kGetNumKeys:
      PutI64(static_cast<std::int64_t>(kv_.size()), &out);
      break;
    case QueryType::kCancelWait:
      Disconnect(conn, replies);  // clears its wait state only; it stays validated
      validated_.insert(conn);
      PutU8(kWaitCanceled, &out);
      break;
    case QueryType::kQueuePush:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      if (!HandleQueueOp(conn, req, &out, replies)) return false;
      break;
    default:
      if (!HandleKeyOp(conn, req, &out, replies)) return false;
  }
  if (!out.empty()) replies->push_back({conn, std::move(out)});
  return true;
}

bool TcpStoreState::HandleKeyOp(ConnId conn, const Request& req, std::string* out,
                                std::vector<Reply>* replies) {
  switch (req.type) {
    case QueryType::kSet:
      return Set(req.keys[0], req.values[0], replies);
    case QueryType::kCompareSet: {
      const std::string& key = req.keys[0];
      auto it = kv_.find(key);
      if (it == kv_.end()) {
        // torch answers `expected` when the key is absent and expected is non-empty.
        if (req.values[0].empty() && !Put(key, req.values[1])) return false;
        PutBytes(req.values[0].empty() ? req.values[1] : req.values[0], out);
      } else {
        if (it->second == req.values[0] && !Put(key, req.values[1])) return false;
        PutBytes(kv_.at(key), out);
      }
      WakeAll(key, replies);
      return true;
    }
    case QueryType::kGet: {
      auto it = kv_.find(req.keys[0]);
      PutBytes(it == kv_.end() ? std::string_view() : std::string_view(it->second), out);
      return true;
    }
    case QueryType::kAdd:
      return HandleAdd(req, out, replies);
    case QueryType::kCheck: {
      bool ready = std::all_of(req.keys.begin(), req.keys.end(),
                               [&](const std::string& k) { return Ready(k); });
      PutU8(ready ? kCheckReady : kCheckNotReady, out);
      return true;
    }
    case QueryType::kWait:
      if (waiting_.contains(conn)) return Refuse("a second WAIT while one is pending");
      if (Wait(conn, req.keys)) PutU8(kWaitStopWaiting, out);
      return true;
    case QueryType::kDeleteKey: {
      auto it = kv_.find(req.keys[0]);
      const bool found = it != kv_.end();
      if (found) {
        stored_bytes_ -= EntryBytes(it->first, it->second);
        kv_.erase(it);
      }
      PutI64(found ? 1 : 0, out);
      return true;
    }
    case QueryType::kAppend: {
      const std::string& key = req.keys[0];
      auto it = kv_.find(key);
      const size_t size = (it == kv_.end() ? 0 : it->second.size()) + req.values[0].size();
      if (size > limits_.max_value_bytes) {
        return Refuse("APPEND would make a value of " + std::to_string(size) + " bytes");
      }
      const size_t added = it == kv_.end() ? EntryBytes(key, req.values[0]) : req.values[0].size();
      if (!Admit(added, "an APPEND")) return false;
      stored_bytes_ += added;
      kv_[key].append(req.values[0]);
      WakeAll(key, replies);
      return true;
    }
    case QueryType::kMultiGet:
      return HandleMultiGet(req, out);
    case QueryType::kMultiSet:
      for (size_t i = 0; i < req.keys.size(); ++i) {
        if (!Set(req.keys[i], req.values[i], replies)) return false;
      }
      return true;
    default:
      return Refuse("an unknown request");
  }
}

bool TcpStoreState::HandleAdd(const Request& req, std::string* out,
                              std::vector<Reply>* replies) {
  std::int64_t value = req.i64;
  if (auto it = kv_.find(req.keys[0]); it != kv_.end()) {
    std::int64_t old = 0;
    const std::string& s = it->second;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), old);
    if (ec != std::errc() || end != s.data() + s.size()) {
      return Refuse("ADD on a value that is not a number");
    }
    // torch's server would overflow a signed integer (undefined behaviour); refuse instead.
    if (__builtin_add_overflow(old, req.i64, &value)) {
      return Refuse("ADD past the range of int64");
    }
  }
  if (!Set(req.keys[0], std::to_string(value), replies)) return false;
  PutI64(value, out);
  return true;
}

bool TcpStoreState::HandleMultiGet(const Request& req, std::string* out) {
  size_t reply = 0;
  for (const std::string& key : req.keys) {
    auto it = kv_.find(key);
    reply += sizeof(std::uint64_t) + (it == kv_.end() ? 0 : it->second.size());
    if (reply > limits_.max_reply_bytes) {
      return Refuse("a MULTI_GET reply larger than " + std::to_string(limits_.max_reply_bytes) +
                    " bytes");
    }
  }
  out->reserve(reply);
  for (const std::string& key : req.keys) {
    auto it = kv_.find(key);
    PutBytes(it == kv_.end() ? std::string_view() : std::string_view(it->second), out);
  }
  return true;
}

bool TcpStoreState::HandleQueueOp(ConnId conn, const Request& req, std::string* out,
                                  std::vector<Reply>* replies) {
  const std::string& key = req.keys[0];
  if (req.type == QueryType::kQueuePush) {
    if (!Admit(EntryBytes(key, req.values[0]), "a QUEUE_PUSH")) return false;
    stored_bytes_ += EntryBytes(key, req.values[0]);
    queues_[key].push_back(req.values[0]);
    WakeOne(key, replies);  // one pushed item can satisfy only one blocked pop
    return true;
  }
  auto it = queues_.find(key);
  const size_t len = it == queues_.end() ? 0 : it->second.size();
  if (req.type == QueryType::kQueueLen) {
    PutI64(static_cast<std::int64_t>(len), out);
    return true;
  }
  // Items are interchangeable: a client holding a reservation takes the front one, as does a
  // client without one while some item is unreserved. Anyone else finds the queue empty (torch's
  // client reads a length of 0 as QueueEmptyError).
  const bool held = EndReservation(conn, key);
  if (!held && Unreserved(key) == 0) {
    PutI64(0, out);
    return true;
  }
  PutI64(static_cast<std::int64_t>(len), out);
  PutBytes(it->second.front(), out);
  stored_bytes_ -= EntryBytes(key, it->second.front());
  it->second.pop_front();
  return true;
}

size_t TcpStoreState::Unreserved(const std::string& queue) const {
  auto q = queues_.find(queue);
  if (q == queues_.end()) return 0;
  // Reservations live only between a client's WAIT and its next request: a handful at most.
  const auto held = static_cast<size_t>(std::count_if(
      reservation_.begin(), reservation_.end(), [&](const auto& r) { return r.second == queue; }));
  return q->second.size() > held ? q->second.size() - held : 0;
}

void TcpStoreState::Reserve(ConnId conn, const std::string& queue) {
  reservation_[conn] = queue;  // at most one per client: its next request uses or ends it
}

bool TcpStoreState::EndReservation(ConnId conn, const std::string& queue) {
  auto r = reservation_.find(conn);
  if (r == reservation_.end()) return false;
  const bool on_queue = r->second == queue;
  reservation_.erase(r);
  return on_queue;
}

void TcpStoreState::ReleaseUnusedReservation(ConnId conn, const Request& req,
                                             std::vector<Reply>* replies) {
  auto r = reservation_.find(conn);
  if (r == reservation_.end()) return;
  if (req.type == QueryType::kQueuePop && !req.keys.empty() && req.keys[0] == r->second) return;
  const std::string queue = r->second;
  EndReservation(conn, queue);
  WakeOne(queue, replies);
}

bool TcpStoreState::Set(const std::string& key, std::string value, std::vector<Reply>* replies) {
  if (!Put(key, std::move(value))) return false;
  WakeAll(key, replies);
  return true;
}

bool TcpStoreState::Ready(const std::string& key) const {
  return kv_.contains(key) || Unreserved(key) > 0;
}

bool TcpStoreState::Wait(ConnId conn, const std::vector<std::string>& keys) {
  std::set<std::string> missing;
  for (const std::string& key : keys) {
    if (!Ready(key)) missing.insert(key);
  }
  if (missing.empty()) {
    // A WAIT on one queue is the first half of a blocking queue_pop: hold it an item.
    if (keys.size() == 1 && !kv_.contains(keys[0])) Reserve(conn, keys[0]);
    return true;
  }
  for (const std::string& key : missing) waiters_by_key_[key].push_back(conn);
  waiting_[conn] = std::move(missing);
  return false;
}

void TcpStoreState::WakeAll(const std::string& key, std::vector<Reply>* replies) {
  auto it = waiters_by_key_.find(key);
  if (it == waiters_by_key_.end()) return;
  std::vector<ConnId> conns = std::move(it->second);
  waiters_by_key_.erase(it);
  for (ConnId conn : conns) {
    auto w = waiting_.find(conn);
    if (w == waiting_.end()) continue;
    w->second.erase(key);
    if (w->second.empty()) {
      waiting_.erase(w);
      replies->push_back({conn, WaitDone()});
    }
  }
}

void TcpStoreState::WakeOne(const std::string& key, std::vector<Reply>* replies) {
  auto it = waiters_by_key_.find(key);
  if (it == waiters_by_key_.end() || Unreserved(key) == 0) return;
  auto& conns = it->second;
  // Wake the first waiter for which this key was the last one missing; the others keep waiting.
  for (auto c = conns.begin(); c != conns.end(); ++c) {
    auto w = waiting_.find(*c);
    if (w == waiting_.end() || w->second.size() != 1) continue;
    const ConnId conn = *c;
    conns.erase(c);
    waiting_.erase(w);
    Reserve(conn, key);
    replies->push_back({conn, WaitDone()});
    break;
  }
  if (conns.empty()) waiters_by_key_.erase(it);
}

void TcpStoreState::Disconnect(ConnId conn, std::vector<Reply>* replies) {
  validated_.erase(conn);
  if (auto r = reservation_.find(conn); r != reservation_.end()) {
    const std::string queue = r->second;
    EndReservation(conn, queue);
    WakeOne(queue, replies);
  }
  auto w = waiting_.find(conn);
  if (w == waiting_.end()) return;
  for (const std::string& key : w->second) {
    auto it = waiters_by_key_.find(key);
    if (it == waiters_by_key_.end()) continue;
    std::erase(it->second, conn);
    if (it->second.empty()) waiters_by_key_.erase(it);
  }
  waiting_.erase(w);
}

}  // namespace lockstep::launcher::stores
