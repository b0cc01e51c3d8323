#include "launcher/stores/gloo_kv_server.h"

#include <algorithm>
#include <utility>

namespace lockstep::launcher::stores {

GlooKvServer::GlooKvServer(std::map<std::string, int> scope_sizes, GlooKvOptions options)
    : options_(options),
      state_(std::move(scope_sizes), options.max_stored_bytes),
      server_(this, options.server.ToConnectionLimits(), "gloo kv: ", options.clock) {}

GlooKvServer::~GlooKvServer() { Stop(); }

StatusOr<int> GlooKvServer::Start(const std::string& host, int port) {
  return ServeOn(server_, host, port);
}

void GlooKvServer::Stop() {
  server_.Stop();
  clients_.clear();
  pending_bytes_ = 0;
}

void GlooKvServer::OnOpen(ConnId conn) {
  clients_[conn];
  // One request per connection: the whole of it within the timeout, idle time included.
  server_.SetDeadline(conn, server_.clock().Now() + options_.request_timeout);
}

void GlooKvServer::Answer(ConnId conn, int code, std::string_view body) {
  // A failed send closes the connection at once; CloseAfterFlush then finds nothing to close.
  server_.Send(conn, HttpResponse(code, body));
  server_.CloseAfterFlush(conn);
}

// One request per connection, as with Python's HTTP/1.0 server: answer, then close.
bool GlooKvServer::OnData(ConnId conn, std::string* in) {
  Client& client = clients_[conn];
  HttpRequest req;
  size_t consumed = 0;
  const HttpParse parsed = client.reader.Feed(*in, &req, &consumed);
  // Count what the request will hold once whole (declared), or what arrived so far.
  const size_t holds = std::max(client.reader.declared_bytes(), in->size());
  pending_bytes_ = pending_bytes_ - client.counted + holds;
  client.counted = holds;
  if (parsed == HttpParse::kInvalid) {
    in->clear();
    Answer(conn, 400, "");
    return true;
  }
  if (parsed == HttpParse::kNeedMore) {
    if (pending_bytes_ <= options_.max_pending_bytes) return true;
    in->clear();
    Answer(conn, 503, "");  // Horovod's client retries
    return true;
  }
  in->clear();  // nothing after the one request is read
  KvResponse res = state_.Handle(req.method, req.path, std::move(req.body));
  Answer(conn, res.code, res.body);
  return true;
}

void GlooKvServer::OnClose(ConnId conn, const net::CloseInfo& /*info*/) {
  if (auto it = clients_.find(conn); it != clients_.end()) {
    pending_bytes_ -= it->second.counted;
    clients_.erase(it);
  }
}

}  // namespace lockstep::launcher::stores
