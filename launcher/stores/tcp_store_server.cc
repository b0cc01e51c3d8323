#include "launcher/stores/tcp_store_server.h"

#include "common/log.h"

namespace lockstep::launcher::stores {

TcpStoreServer::TcpStoreServer(TcpStoreOptions options)
    : options_(options),
      state_(options.store),
      server_(this, options.server.ToConnectionLimits(), "tcpstore: ", options.clock) {}

TcpStoreServer::~TcpStoreServer() { Stop(); }

StatusOr<int> TcpStoreServer::Start(const std::string& host, int port) {
  return ServeOn(server_, host, port);
}

void TcpStoreServer::Stop() {
  server_.Stop();
  clients_.clear();
  pending_bytes_ = 0;
}

void TcpStoreServer::OnOpen(ConnId conn) {
  clients_[conn];
  server_.SetDeadline(conn, server_.clock().Now() + options_.handshake_timeout);
}

bool TcpStoreServer::OnData(ConnId conn, std::string* in) {
  std::vector<Reply> replies;
  const bool keep = Serve(conn, clients_[conn], *in, &replies);
  // The parser keeps every byte it consumed: nothing is left for the next read to look at again.
  in->clear();
  if (keep) UpdateDeadline(conn, clients_[conn]);
  // A failed send closes its connection at once (OnClose), which may be this one: last.
  for (Reply& r : replies) server_.Send(r.conn, r.bytes);
  return keep;
}

bool TcpStoreServer::Serve(ConnId conn, Client& client, std::string_view in,
                           std::vector<Reply>* replies) {
  while (!in.empty()) {
    Request req;
    size_t used = 0;
    std::string error;
    const uint64_t held_before = client.parser.request_bytes();
    const ParseResult res = client.parser.Feed(in, &used, &req, &error);
    in.remove_prefix(used);
    pending_bytes_ = pending_bytes_ - held_before + client.parser.request_bytes();
    if (res == ParseResult::kInvalid) return Refuse(conn, "malformed request: " + error);
    if (!state_.IsValidated(conn) && client.parser.type().value_or(QueryType::kValidate) !=
                                         QueryType::kValidate) {
      return Refuse(conn, "the first request is not VALIDATE");
    }
    if (pending_bytes_ > options_.max_pending_bytes) {
      return Refuse(conn, "unfinished requests of all clients exceed " +
                              std::to_string(options_.max_pending_bytes) + " bytes");
    }
    if (res == ParseResult::kNeedMore) return true;
    if (!state_.Handle(conn, req, replies)) return Refuse(conn, state_.refusal());
  }
  return true;
}

void TcpStoreServer::UpdateDeadline(ConnId conn, Client& client) {
  const bool mid = client.parser.request_bytes() > 0;
  if (mid && !client.mid_request) {
    server_.SetDeadline(conn, server_.clock().Now() + options_.request_timeout);
  } else if (!mid && state_.IsValidated(conn)) {
    server_.SetDeadline(conn, std::nullopt);  // idle between requests: kept
  }
  client.mid_request = mid;
}

bool TcpStoreServer::Refuse(ConnId conn, const std::string& why) {
  // A hostile client could otherwise fill the log: the first refusal and every 100th.
  if (refusals_++ % 100 == 0) {
    log::Warning("tcpstore: closing a client", {{"reason", why},
                                                {"connection", std::to_string(conn)},
                                                {"refusals", std::to_string(refusals_)}});
  }
  return false;
}

void TcpStoreServer::OnClose(ConnId conn, const net::CloseInfo& /*info*/) {
  if (auto it = clients_.find(conn); it != clients_.end()) {
    pending_bytes_ -= it->second.parser.request_bytes();
    clients_.erase(it);
  }
  std::vector<Reply> replies;  // a closed client's reserved queue item may wake another
  state_.Disconnect(conn, &replies);
  for (Reply& r : replies) server_.Send(r.conn, r.bytes);
}

}  // namespace lockstep::launcher::stores
