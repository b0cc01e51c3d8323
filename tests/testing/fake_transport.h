#pragma once
// A kube::Transport (operator/kube/transport.h) that answers from the test instead of an
// apiserver, for unit tests of a component's own logic over the real RestClient: retries,
// slow-start batches, undo, pacing, what a body carries. Whatever depends on how the apiserver
// behaves (conflicts, field managers, admission, garbage collection) is tested against the real
// one in tests/integration. Thread-safe: components send from many threads.
//
// Each request is answered by the first queued answer (Push), else by the handler (SetHandler),
// else 200 with "{}". Every request is recorded in arrival order. FakeKubeTest is the fixture of
// such a test: the transport, a RestClient over it and the fake clock.

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/event_recorder.h"
#include "operator/kube/rest_client.h"
#include "operator/kube/transport.h"
#include "tests/testing/fake_clock.h"

namespace lockstep::testing {

class FakeTransport final : public kube::Transport {
 public:
  using Handler = std::function<StatusOr<kube::Response>(const kube::Request&)>;

  void Push(StatusOr<kube::Response> answer);
  void SetHandler(Handler handler);
  // The lines a Stream() call delivers (a watch).
  void SetStreamLines(std::vector<std::string> lines);

  StatusOr<kube::Response> Do(const kube::Request& request) override;
  StatusOr<kube::Response> Stream(const kube::Request& request, const kube::StreamOptions& options,
                                  const kube::LineHandler& on_line) override;
  std::string Host() const override { return "fake-apiserver:6443"; }

  std::vector<kube::Request> requests() const;
  // The recorded requests with this method whose path starts with `path_prefix`.
  std::vector<kube::Request> RequestsTo(std::string_view method,
                                        std::string_view path_prefix) const;
  // Their bodies, parsed.
  std::vector<nlohmann::json> BodiesTo(std::string_view method,
                                       std::string_view path_prefix) const;

 private:
  mutable std::mutex mu_;
  std::deque<StatusOr<kube::Response>> queued_;  // guarded by mu_
  Handler handler_;                              // guarded by mu_
  std::vector<std::string> stream_lines_;        // guarded by mu_
  std::vector<kube::Request> requests_;          // guarded by mu_
};

// RestClient options for a client over a FakeTransport: no client-side rate limit and no retries,
// so every call is exactly one request the test can script and count.
kube::RestOptions OneTryUnlimited();

class FakeKubeTest : public ::testing::Test {
 protected:
  // A 2xx/4xx/5xx answer with a JSON body.
  static kube::Response Json(long status, const nlohmann::json& body);
  // The metav1.Status body the apiserver sends with an error, e.g. (409, "Conflict").
  static kube::Response ApiStatus(long status, std::string_view reason,
                                  std::string_view message = "");
  // The reasons of the Events written to namespace `ns` (after `events` flushed), in order.
  std::vector<std::string> EventReasons(kube::EventRecorder& events, std::string_view ns = "ns");

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  FakeClock clock_;
  kube::RestClient client_{transport_, OneTryUnlimited()};
};

}  // namespace lockstep::testing
