#include "launcher/stores/tcpstore_state.h"

#include <algorithm>
#include <charconv>

namespace lockstep::launcher::stores {
namespace {

std::string WaitDone() {
  std::string out;
  PutU8(kWaitStopWaiting, &out);
  return out;
}

}  // namespace

bool TcpStoreState::Handle(ConnId conn, const Request& req, std::vector<Reply>* replies) {
  if (!validated_.contains(conn)) {
    // The libuv server accepts nothing but VALIDATE as a connection's first request.
    if (req.type != QueryType::kValidate || req.u32 != kValidationMagic) return false;
    validated_.insert(conn);
    return true;
  }
  ReleaseUnusedReservation(conn, req, replies);
  std::string out;
  switch (req.type) {
    case QueryType::kValidate:
      if (req.u32 != kValidationMagic) return false;
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
      HandleQueueOp(conn, req, &out, replies);
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
      Set(req.keys[0], req.values[0], replies);
      return true;
    case QueryType::kCompareSet: {
      const std::string& key = req.keys[0];
      auto it = kv_.find(key);
      if (it == kv_.end()) {
        // torch answers `expected` when the key is absent and expected is non-empty.
        if (req.values[0].empty()) kv_[key] = req.values[1];
        PutBytes(req.values[0].empty() ? req.values[1] : req.values[0], out);
      } else {
        if (it->second == req.values[0]) it->second = req.values[1];
        PutBytes(it->second, out);
      }
      WakeAll(key, replies);
      return true;
    }
    case QueryType::kGet: {
      auto it = kv_.find(req.keys[0]);
      PutBytes(it == kv_.end() ? std::string_view() : std::string_view(it->second), out);
      return true;
    }
    case QueryType::kAdd: {
      std::int64_t value = req.i64;
      if (auto it = kv_.find(req.keys[0]); it != kv_.end()) {
        std::int64_t old = 0;
        const std::string& s = it->second;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), old);
        if (ec != std::errc() || end != s.data() + s.size()) return false;
        if (__builtin_add_overflow(value, old, &value)) return false;  // a sum beyond int64
      }
      Set(req.keys[0], std::to_string(value), replies);
      PutI64(value, out);
      return true;
    }
    case QueryType::kCheck: {
      bool ready = std::all_of(req.keys.begin(), req.keys.end(),
                               [&](const std::string& k) { return Ready(k); });
      PutU8(ready ? kCheckReady : kCheckNotReady, out);
      return true;
    }
    case QueryType::kWait:
      if (Wait(conn, req.keys)) PutU8(kWaitStopWaiting, out);
      return true;
    case QueryType::kDeleteKey:
      PutI64(static_cast<std::int64_t>(kv_.erase(req.keys[0])), out);
      return true;
    case QueryType::kAppend:
      kv_[req.keys[0]].append(req.values[0]);
      WakeAll(req.keys[0], replies);
      return true;
    case QueryType::kMultiGet:
      for (const std::string& key : req.keys) {
        auto it = kv_.find(key);
        PutBytes(it == kv_.end() ? std::string_view() : std::string_view(it->second), out);
      }
      return true;
    case QueryType::kMultiSet:
      for (size_t i = 0; i < req.keys.size(); ++i) Set(req.keys[i], req.values[i], replies);
      return true;
    default:
      return false;
  }
}

void TcpStoreState::HandleQueueOp(ConnId conn, const Request& req, std::string* out,
                                  std::vector<Reply>* replies) {
  const std::string& key = req.keys[0];
  if (req.type == QueryType::kQueuePush) {
    queues_[key].push_back(req.values[0]);
    WakeOne(key, replies);  // one pushed item can satisfy only one blocked pop
    return;
  }
  auto it = queues_.find(key);
  const size_t len = it == queues_.end() ? 0 : it->second.size();
  if (req.type == QueryType::kQueueLen) {
    PutI64(static_cast<std::int64_t>(len), out);
    return;
  }
  // Items are interchangeable: a client holding a reservation takes the front one, as does a
  // client without one while some item is unreserved. Anyone else finds the queue empty (torch's
  // client reads a length of 0 as QueueEmptyError).
  const bool held = EndReservation(conn, key);
  if (!held && Unreserved(key) == 0) {
    PutI64(0, out);
    return;
  }
  PutI64(static_cast<std::int64_t>(len), out);
  PutBytes(it->second.front(), out);
  it->second.pop_front();
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

void TcpStoreState::Set(const std::string& key, std::string value, std::vector<Reply>* replies) {
  kv_[key] = std::move(value);
  WakeAll(key, replies);
}

bool TcpStoreState::Ready(const std::string& key) const {
  return kv_.contains(key) || Unreserved(key) > 0;
}

bool TcpStoreState::Wait(ConnId conn, const std::vector<std::string>& keys) {
  // torch's client has one WAIT outstanding at a time; a second one sent before the first was
  // answered replaces it. Left registered, the first one's keys kept the client listed as their
  // waiter, so an item for them woke it out of its other wait and was reserved for it, even
  // after it disconnected: the item was never popped (found by tests/fuzz/tcpstore).
  DropWaits(conn);
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

void TcpStoreState::DropWaits(ConnId conn) {
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

void TcpStoreState::Disconnect(ConnId conn, std::vector<Reply>* replies) {
  validated_.erase(conn);
  // Waits first, so the released item cannot be handed to the closing client itself.
  DropWaits(conn);
  if (auto r = reservation_.find(conn); r != reservation_.end()) {
    const std::string queue = r->second;
    EndReservation(conn, queue);
    WakeOne(queue, replies);
  }
}

}  // namespace lockstep::launcher::stores
