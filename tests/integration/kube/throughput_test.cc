// Objects created per second: one request at a time versus many in flight, over HTTP/2 (one
// multiplexed connection) and HTTP/1.1 (a connection per concurrent request).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/integration/kube/test_env.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

// Creates `count` ConfigMaps with `in_flight` concurrent requests; returns creates per second.
double CreateRate(RestClient& client, const std::string& ns, const std::string& prefix,
                  int count, int in_flight) {
  std::atomic<int> next{0}, failures{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < in_flight; ++w) {
    workers.emplace_back([&] {
      for (int i; (i = next++) < count;) {
        json cm = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata", {{"name", prefix + "-" + std::to_string(i)}}},
                   {"data", {{"payload", std::string(256, 'x')}}}};
        if (!client.Create(resources::ConfigMaps(), ns, cm).ok()) ++failures;
      }
    });
  }
  for (auto& t : workers) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(failures.load(), 0);
  return count / seconds;
}

TEST(ThroughputTest, ManyInFlightBeatsOneAtATime) {
  LS_REQUIRE_CLUSTER();
  auto h2 = testing::Connect();
  ASSERT_TRUE(h2.ok()) << h2.status();
  testing::TestNamespace ns(*h2->client, "kube-tput");
  ASSERT_TRUE(ns.status().ok());
  CurlTransportOptions h1_options;
  h1_options.http2 = false;
  auto h1_transport = NewCurlTransport(h2->config, h1_options);
  ASSERT_TRUE(h1_transport.ok());
  RestClient h1(std::shared_ptr<Transport>(std::move(h1_transport).value()), testing::NoLimits());

  constexpr int kCount = 400;
  constexpr int kInFlight = 32;
  // Warm up connections and the apiserver's caches so the first row is not penalised.
  CreateRate(*h2->client, ns.name(), "warm", 20, 4);
  const double sequential = CreateRate(*h2->client, ns.name(), "seq", kCount, 1);
  const double parallel_h2 = CreateRate(*h2->client, ns.name(), "h2", kCount, kInFlight);
  const double parallel_h1 = CreateRate(h1, ns.name(), "h1", kCount, kInFlight);
  std::printf("| mode | in flight | creates/s |\n|---|---|---|\n");
  std::printf("| HTTP/2, one at a time | 1 | %.0f |\n", sequential);
  std::printf("| HTTP/2, multiplexed | %d | %.0f |\n", kInFlight, parallel_h2);
  std::printf("| HTTP/1.1, connection per request | %d | %.0f |\n", kInFlight, parallel_h1);
  std::printf("speed-up with %d in flight (HTTP/2): %.2fx\n", kInFlight, parallel_h2 / sequential);
  RecordProperty("sequential_per_s", std::to_string(sequential));
  RecordProperty("parallel_h2_per_s", std::to_string(parallel_h2));
  RecordProperty("parallel_h1_per_s", std::to_string(parallel_h1));
  EXPECT_GT(parallel_h2, sequential * 1.2);
}

}  // namespace
}  // namespace lockstep::kube
