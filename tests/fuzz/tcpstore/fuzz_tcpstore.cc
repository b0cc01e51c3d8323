// Fuzz target for the TCPStore-compatible store (launcher/stores/): the wire codec and the store
// semantics behind it, fed as the server feeds them: bytes arrive per connection in chunks, each
// connection's buffer is parsed request by request, a malformed or rejected request closes that
// connection, and connections close at any moment. Any pod of the job can connect to the store,
// so every byte is untrusted. Checked beyond "no crash":
//   - a parsed request has a length within what was buffered, and encodes back to those bytes;
//   - replies go only to open connections; waits and queue reservations belong to open ones.
//
// Input: records of [control byte][length byte][length bytes]. The control byte's low two bits
// pick one of four connections; its top bit closes that connection first.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/check.h"
#include "launcher/stores/tcpstore_codec.h"
#include "launcher/stores/tcpstore_state.h"
#include "tests/fuzz/fuzz_input.h"

namespace lockstep::launcher::stores {
namespace {

class Harness {
 public:
  void Close(ConnId conn) {
    if (!open_.erase(conn)) return;
    buffers_[conn].clear();
    std::vector<Reply> replies;
    state_.Disconnect(conn, &replies);
    CheckReplies(replies);
  }

  // What TcpStoreServer::OnData does with a connection's buffer.
  void Receive(ConnId conn, std::string_view bytes) {
    open_.insert(conn);
    std::string& in = buffers_[conn];
    in.append(bytes);
    size_t offset = 0;
    std::vector<Reply> replies;
    bool keep = true;
    while (keep && offset < in.size()) {
      Request req;
      size_t consumed = 0;
      std::string error;
      const std::string_view rest = std::string_view(in).substr(offset);
      const ParseResult res = ParseRequest(rest, &req, &consumed, &error);
      if (res == ParseResult::kNeedMore) break;
      if (res == ParseResult::kInvalid) {
        LS_CHECK(!error.empty());
        keep = false;
        break;
      }
      LS_CHECK(consumed > 0 && consumed <= rest.size());
      std::string encoded;
      EncodeRequest(req, &encoded);
      LS_CHECK(encoded == rest.substr(0, consumed));
      offset += consumed;
      keep = state_.Handle(conn, req, &replies);
    }
    in.erase(0, offset);
    CheckReplies(replies);
    if (!keep) Close(conn);
    LS_CHECK(state_.num_waiting() <= open_.size());
    LS_CHECK(state_.num_reserved() <= open_.size());
  }

 private:
  void CheckReplies(const std::vector<Reply>& replies) const {
    for (const Reply& r : replies) LS_CHECK(open_.contains(r.conn));
  }

  TcpStoreState state_;
  std::set<ConnId> open_;
  std::string buffers_[4];
};

}  // namespace
}  // namespace lockstep::launcher::stores

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::launcher::stores;
  return lockstep::fuzz::FeedRecords<Harness>(
      data, size, [](Harness& harness, uint8_t control, std::string_view bytes) {
        const ConnId conn = control & 3;
        if (control & 0x80) harness.Close(conn);
        harness.Receive(conn, bytes);
      });
}
