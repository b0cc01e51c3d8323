// Fuzz target for the watch-event stream decoder: the bytes of a watch response, split into
// chunks at arbitrary points, go through the transport's LineSplitter and RestClient::Watch's
// event decoding (ParseObjectJson, the event type, the object), and every event's object through
// the decoder an informer of one resource would use. The apiserver is trusted, but the objects
// it relays are written by users and pods. Acceptable outcomes: events or error values.
//
// Input: byte 0 picks the chunk size (1..256), byte 1 the resource (Pod, Node, Lease,
// TrainingJob, Secret/Service metadata, generic object); the rest is the response body.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/check.h"
#include "operator/api/codec.h"
#include "operator/kube/line_splitter.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"
#include "tests/fuzz/fuzz_input.h"

namespace lockstep::kube {
namespace {

// Delivers a canned body as a 200 watch response, `chunk` bytes at a time.
class CannedStream final : public Transport {
 public:
  CannedStream(std::string_view body, size_t chunk, size_t max_line)
      : body_(body), chunk_(chunk), max_line_(max_line) {}

  StatusOr<Response> Do(const Request&) override { return UnavailableError("no server"); }

  StatusOr<Response> Stream(const Request&, const StreamOptions&,
                            const LineHandler& on_line) override {
    LineSplitter lines(max_line_);
    LineSplitter::Result result = LineSplitter::Result::kMore;
    fuzz::ForEachChunk(body_, chunk_, [&](std::string_view piece) {
      result = lines.Append(piece, on_line);
      // While the stream goes on, no more than one line's worth is ever held.
      LS_CHECK(result != LineSplitter::Result::kMore || lines.buffered() <= max_line_);
      return result == LineSplitter::Result::kMore;
    });
    if (result == LineSplitter::Result::kStopped) return CancelledError("stopped by handler");
    if (result == LineSplitter::Result::kTooLong) return ResourceExhaustedError("line too long");
    return Response{200, "", ""};
  }

  std::string Host() const override { return "fuzz"; }

 private:
  std::string_view body_;
  size_t chunk_;
  size_t max_line_;
};

void DecodeObject(uint8_t resource, const nlohmann::json& object) {
  switch (resource % 6) {
    case 0: (void)DecodePod(object).ok(); break;
    case 1: (void)DecodeNode(object).ok(); break;
    case 2: (void)DecodeLease(object).ok(); break;
    case 3: (void)api::DecodeTrainingJob(object).ok(); break;
    case 4: (void)DecodeMetaObject(object).ok(); break;
    default: (void)DecodeGenericObject(object).ok(); break;
  }
}

}  // namespace
}  // namespace lockstep::kube

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::kube;
  lockstep::fuzz::FuzzInput in(data, size);
  const size_t chunk = 1 + in.Byte();
  const uint8_t resource = in.Byte();
  const std::string_view body = in.Rest();
  // A small line bound too, so the too-long path is reachable with short inputs.
  for (size_t max_line : {kMaxStreamLineBytes, size_t{512}}) {
    RestOptions options;
    options.qps = 0;
    options.max_retries = 0;
    RestClient client(std::make_shared<CannedStream>(body, chunk, max_line), options);
    int events = 0;
    lockstep::Status s = client.Watch(resources::Pods(), "ns", WatchOptions{},
                                      [&](WatchEvent&& event) {
                                        ++events;
                                        DecodeObject(resource, event.object);
                                        return true;
                                      });
    (void)s.ok();
    LS_CHECK(static_cast<size_t>(events) <= body.size());
  }
  return 0;
}
