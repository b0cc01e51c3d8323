#include "launcher/stores/gloo_kv_server.h"

#include <utility>

#include "launcher/stores/http_codec.h"

namespace lockstep::launcher::stores {

GlooKvServer::GlooKvServer(std::map<std::string, int> scope_sizes)
    : state_(std::move(scope_sizes)), server_(this) {}

GlooKvServer::~GlooKvServer() { Stop(); }

StatusOr<int> GlooKvServer::Start(int port) { return server_.Start(port); }

void GlooKvServer::Stop() { server_.Stop(); }

// One request per connection, as with Python's HTTP/1.0 server: answer, then close.
bool GlooKvServer::OnData(ConnId conn, std::string* in) {
  HttpRequest req;
  size_t consumed = 0;
  switch (ParseHttpRequest(*in, &req, &consumed)) {
    case HttpParse::kNeedMore:
      return true;
    case HttpParse::kInvalid:
      in->clear();
      server_.Send(conn, HttpResponse(400, ""));
      server_.CloseAfterFlush(conn);
      return true;
    case HttpParse::kOk:
      break;
  }
  in->erase(0, consumed);
  KvResponse res = state_.Handle(req.method, req.path, std::move(req.body));
  server_.Send(conn, HttpResponse(res.code, res.body));
  server_.CloseAfterFlush(conn);
  return true;
}

}  // namespace lockstep::launcher::stores
