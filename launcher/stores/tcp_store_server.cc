#include "launcher/stores/tcp_store_server.h"

#include "common/log.h"

namespace lockstep::launcher::stores {

TcpStoreServer::TcpStoreServer() : server_(this) {}

TcpStoreServer::~TcpStoreServer() { Stop(); }

StatusOr<int> TcpStoreServer::Start(int port) { return server_.Start(port); }

void TcpStoreServer::Stop() { server_.Stop(); }

bool TcpStoreServer::OnData(ConnId conn, std::string* in) {
  size_t offset = 0;
  std::vector<Reply> replies;
  bool keep = true;
  while (offset < in->size()) {
    Request req;
    size_t consumed = 0;
    std::string error;
    ParseResult res = ParseRequest(std::string_view(*in).substr(offset), &req, &consumed, &error);
    if (res == ParseResult::kNeedMore) break;
    if (res == ParseResult::kInvalid) {
      log::Warning("tcpstore: closing client after a malformed request", {{"error", error}});
      keep = false;
      break;
    }
    offset += consumed;
    if (!state_.Handle(conn, req, &replies)) {
      log::Warning("tcpstore: closing client after a rejected request",
                   {{"query", std::to_string(static_cast<int>(req.type))}});
      keep = false;
      break;
    }
  }
  in->erase(0, offset);
  for (Reply& r : replies) server_.Send(r.conn, r.bytes);
  return keep;
}

void TcpStoreServer::OnClose(ConnId conn) {
  std::vector<Reply> replies;  // a closed client's reserved queue item may wake another
  state_.Disconnect(conn, &replies);
  for (Reply& r : replies) server_.Send(r.conn, r.bytes);
}

}  // namespace lockstep::launcher::stores
