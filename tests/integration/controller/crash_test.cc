// SIGKILL the operator at random points while 50 jobs are being created; after a restart no job
// may have more pods than its spec asks for (checked over all pods, not the operator's view).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;

TEST(OperatorCrashTest, SigkillWhileCreatingFiftyJobsNeverYieldsExtraPods) {
  LS_REQUIRE_CLUSTER();
  StatusOr<kube::testing::Cluster> c = kube::testing::Connect();
  ASSERT_TRUE(c.ok()) << c.status();
  kube::RestClient& client = *c->client;
  ASSERT_TRUE(InstallCrd().ok());
  kube::testing::TestNamespace ns(client, "ctrl-crash");
  ASSERT_TRUE(ns.status().ok());

  constexpr int kJobs = 50;
  std::map<std::string, int> want;  // job -> pods its spec asks for
  for (int i = 0; i < kJobs; ++i) want["crash-" + std::to_string(i)] = 1 + i % 3;

  OperatorProcess op({ns.name()});
  ASSERT_TRUE(op.Start().ok());
  std::thread creator([&] {
    for (const auto& [name, replicas] : want) {
      StatusOr<json> r =
          client.Create(kube::resources::TrainingJobs(), ns.name(), MakeJob(name, replicas));
      EXPECT_TRUE(r.ok()) << r.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pause_ms(50, 700);
  int kills = 0;
  for (; kills < 10; ++kills) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    op.Kill(SIGKILL);
    ASSERT_TRUE(op.Start().ok());
  }
  creator.join();

  int total = 0;
  for (const auto& [name, replicas] : want) total += replicas;
  auto all_pods = [&]() -> std::vector<json> {
    StatusOr<kube::ListResult> list = client.List(kube::resources::Pods(), ns.name());
    return list.ok() ? std::vector<json>(list->items.begin(), list->items.end())
                     : std::vector<json>{};
  };
  EXPECT_TRUE(kube::testing::WaitFor([&] { return all_pods().size() == size_t(total); },
                                     std::chrono::seconds(90), std::chrono::milliseconds(250)))
      << "pods: " << all_pods().size() << " want " << total << "; log " << op.log_path();
  // Give a late duplicate the chance to appear before counting.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::map<std::string, int> have;
  std::set<std::string> names;
  for (const json& pod : all_pods()) {
    ++have[pod["metadata"]["labels"].value("lockstep.dev/job-name", "?")];
    EXPECT_TRUE(names.insert(pod["metadata"]["name"].get<std::string>()).second);
  }
  for (const auto& [name, replicas] : want) {
    EXPECT_EQ(have[name], replicas) << name;
  }
  EXPECT_EQ(have.count("?"), 0u);
  RecordProperty("kills", kills);
  op.Kill(SIGTERM);
}

}  // namespace
}  // namespace lockstep::controller::testing
