// Fuzz target for the Horovod Gloo rendezvous store (launcher/stores/): the HTTP/1.x request
// codec and the key-value scopes behind it, fed as GlooKvServer feeds them: bytes arrive per
// connection in chunks, one request per connection is answered, then the connection closes.
// Any pod of the job can connect, so every byte is untrusted. Checked beyond "no crash":
//   - a parsed request lies within the buffered bytes and its body within the size limit;
//   - a stored key reads back: right after a 200 PUT, GET of the same path answers that body;
//   - every response is a well-formed HTTP/1.0 message whose Content-Length is its body's size.
//
// Input: records of [control byte][length byte][length bytes]; the control byte's low two bits
// pick one of four connections.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/check.h"
#include "launcher/stores/gloo_kv_state.h"
#include "launcher/stores/http_codec.h"
#include "tests/fuzz/fuzz_input.h"

namespace lockstep::launcher::stores {
namespace {

void CheckResponse(const KvResponse& res) {
  const std::string wire = HttpResponse(res.code, res.body);
  const std::string length = "Content-Length: " + std::to_string(res.body.size()) + "\r\n\r\n";
  LS_CHECK(wire.starts_with("HTTP/1.0 " + std::to_string(res.code) + " "));
  LS_CHECK(wire.size() >= length.size() + res.body.size());
  LS_CHECK(wire.compare(wire.size() - res.body.size() - length.size(), length.size(), length) ==
           0);
}

class Harness {
 public:
  // What GlooKvServer::OnData does with a connection's buffer; the connection closes after
  // its one answer, so later bytes on it start a new connection.
  void Receive(size_t conn, std::string_view bytes) {
    std::string& in = buffers_[conn];
    in.append(bytes);
    HttpRequest req;
    size_t consumed = 0;
    switch (ParseHttpRequest(in, &req, &consumed)) {
      case HttpParse::kNeedMore:
        LS_CHECK(in.size() <= kMaxHttpHeaderBytes + kMaxHttpBodyBytes + 4);
        return;
      case HttpParse::kInvalid:
        in.clear();
        return;
      case HttpParse::kOk:
        break;
    }
    LS_CHECK(consumed > 0 && consumed <= in.size());
    LS_CHECK(req.body.size() <= kMaxHttpBodyBytes && req.body.size() <= consumed);
    in.clear();
    const std::string body = req.body;
    const KvResponse res = state_.Handle(req.method, req.path, std::move(req.body));
    CheckResponse(res);
    if (req.method == "PUT" && res.code == 200) {
      const KvResponse read = state_.Handle("GET", req.path, "");
      LS_CHECK(read.code == 200 && read.body == body);
    }
  }

 private:
  GlooKvState state_{{{"global", 2}, {"local_host", 1}}};
  std::map<size_t, std::string> buffers_;
};

}  // namespace
}  // namespace lockstep::launcher::stores

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lockstep::launcher::stores::Harness;
  return lockstep::fuzz::FeedRecords<Harness>(
      data, size, [](Harness& harness, uint8_t control, std::string_view bytes) {
        harness.Receive(control & 3, bytes);
      });
}
