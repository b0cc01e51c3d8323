#include "tests/testing/fake_transport.h"

namespace lockstep::testing {

void FakeTransport::Push(StatusOr<kube::Response> answer) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.push_back(std::move(answer));
}

void FakeTransport::SetHandler(Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

void FakeTransport::SetStreamLines(std::vector<std::string> lines) {
  std::lock_guard<std::mutex> lock(mu_);
  stream_lines_ = std::move(lines);
}

StatusOr<kube::Response> FakeTransport::Do(const kube::Request& request) {
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (!queued_.empty()) {
      StatusOr<kube::Response> answer = std::move(queued_.front());
      queued_.pop_front();
      return answer;
    }
    handler = handler_;
  }
  // Outside the lock: a handler may block to hold a request in flight.
  if (handler) return handler(request);
  return kube::Response{200, "{}", ""};
}

StatusOr<kube::Response> FakeTransport::Stream(const kube::Request& request,
                                               const kube::StreamOptions& /*options*/,
                                               const kube::LineHandler& on_line) {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    lines = stream_lines_;
  }
  for (const std::string& line : lines) {
    if (!on_line(line)) return CancelledError("stopped by the handler");
  }
  return kube::Response{200, "", ""};
}

std::vector<kube::Request> FakeTransport::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::vector<kube::Request> FakeTransport::RequestsTo(std::string_view method,
                                                     std::string_view path_prefix) const {
  std::vector<kube::Request> out;
  for (kube::Request& r : requests()) {
    if (r.method == method && r.path.rfind(path_prefix, 0) == 0) out.push_back(std::move(r));
  }
  return out;
}

std::vector<nlohmann::json> FakeTransport::BodiesTo(std::string_view method,
                                                    std::string_view path_prefix) const {
  std::vector<nlohmann::json> out;
  for (const kube::Request& r : RequestsTo(method, path_prefix)) {
    out.push_back(nlohmann::json::parse(r.body));
  }
  return out;
}

kube::RestOptions OneTryUnlimited() {
  kube::RestOptions options;
  options.qps = 0;
  options.max_retries = 0;
  return options;
}

kube::Response FakeKubeTest::Json(long status, const nlohmann::json& body) {
  return kube::Response{status, body.dump(), ""};
}

kube::Response FakeKubeTest::ApiStatus(long status, std::string_view reason,
                                       std::string_view message) {
  return Json(status, {{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"status", "Failure"},
                       {"reason", std::string(reason)},
                       {"message", std::string(message)},
                       {"code", status}});
}

std::vector<std::string> FakeKubeTest::EventReasons(kube::EventRecorder& events,
                                                    std::string_view ns) {
  EXPECT_TRUE(events.Flush(std::chrono::seconds(10)));
  std::vector<std::string> reasons;
  for (const nlohmann::json& event :
       transport_->BodiesTo("POST", "/api/v1/namespaces/" + std::string(ns) + "/events")) {
    reasons.push_back(event["reason"]);
  }
  return reasons;
}

}  // namespace lockstep::testing
