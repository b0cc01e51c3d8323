// The informer memory budget: caches of 10,000 pods and 1,000 nodes must fit in 50 MB of the
// process's RSS. The objects are created by a forked child so that the measuring process's heap
// holds nothing but the client and the caches.
//
// Counts come from LOCKSTEP_KUBE_MEM_PODS / LOCKSTEP_KUBE_MEM_NODES (default and in hack/test.sh:
// the full size, about a minute). Any size is held to the full-size budget by projection: the
// informers' fixed cost (threads, connections) is measured first with both informers over a
// selector matching nothing, then the marginal cost per cached object; fixed + 11,000 x marginal
// must stay under 50 MB. The cost per object falls with the count (list pages, hash tables and
// allocator high-water marks weigh less), so a smaller run projects high: 2,200 objects project
// 59 MB where 11,000 measure 45 MB. Smaller counts are for quick local runs, not for CI.
//
// The operator caches the same pods and nodes twice (the controller's views and the gang
// scheduler's) through shared decode pools (decode_pool.h): a second pair of informers over the
// same objects through the same pools must cost a fraction of the first pair, not as much again.

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "operator/kube/informer.h"
#include "operator/kube/object_pools.h"
#include "operator/kube/objects.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

constexpr int kFullPods = 10000;
constexpr int kFullNodes = 1000;
constexpr int64_t kBudgetBytes = 50 * 1024 * 1024;
// The second view's cost per object against the first's: its store's entries and index, not
// the objects (0.07-0.08 measured when this was written; 0.83 with a second private copy).
constexpr double kSecondViewShare = 0.3;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

json MemPod(int i, const std::string& owner_uid) {
  const std::string job = "job-" + std::to_string(i / 8);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", job + "-worker-" + std::to_string(i % 8)},
            {"labels", {{"lockstep.dev/job-name", job}, {"lockstep.dev/role", "worker"},
                        {"lockstep.dev/replica-index", std::to_string(i % 8)},
                        {"lockstep.dev/attempt", "0"}}},
            {"ownerReferences", json::array({{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                                              {"name", "owner"}, {"uid", owner_uid},
                                              {"controller", true}}})}}},
          {"spec",
           {{"schedulerName", "lockstep"},
            {"tolerations", json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}})},
            {"containers",
             json::array({{{"name", "trainer"},
                           {"image", "registry.local/train:v1"},
                           {"command", {"lockstep-launcher", "--", "python", "train.py"}},
                           {"env", json::array({{{"name", "LOCKSTEP_JOB_NAME"}, {"value", job}}})},
                           {"resources", {{"requests", {{"cpu", "8"}, {"memory", "64Gi"},
                                                        {"nvidia.com/gpu", "8"}}},
                                          {"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}};
}

json MemNode(const std::string& name, const std::string& test_label, int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", {{"lockstep.dev/test", test_label.substr(0, test_label.size() - 1)},
                        {"topology.lockstep.dev/block", "b" + std::to_string(i / 64)},
                        {"topology.lockstep.dev/rack", "r" + std::to_string(i / 8)}}}}},
          {"spec", {{"taints", json::array({{{"key", "lockstep.dev/test"}, {"effect", "NoSchedule"}}})}}},
          {"status", {{"capacity", {{"cpu", "96"}, {"memory", "1Ti"}, {"nvidia.com/gpu", "8"}}},
                      {"allocatable", {{"cpu", "96"}, {"memory", "1Ti"}, {"nvidia.com/gpu", "8"}}}}}};
}

// Runs `make(i)` for i in [0, count) with 64 creates in flight; returns the failure count.
int CreateAll(RestClient& client, const ResourceRef& ref, const std::string& ns, int count,
              const std::function<json(int)>& make) {
  std::atomic<int> next{0}, failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 64; ++w) {
    workers.emplace_back([&] {
      for (int i; (i = next++) < count;) {
        auto r = client.Create(ref, ns, make(i));
        if (!r.ok() && !IsAlreadyExists(r.status())) ++failures;
      }
    });
  }
  for (auto& t : workers) t.join();
  return failures.load();
}

// Child process: creates the objects and exits 0 on success.
int CreateObjects(const std::string& ns, const std::string& node_prefix, int pods, int nodes) {
  auto cluster = testing::Connect();
  if (!cluster.ok()) return 1;
  RestClient& client = *cluster->client;
  auto owner = client.Create(resources::ConfigMaps(), ns,
                             {{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                              {"metadata", {{"name", "owner"}}}});
  if (!owner.ok()) return 1;
  const std::string uid = (*owner)["metadata"]["uid"];
  int failures = CreateAll(client, resources::Pods(), ns, pods,
                           [&](int i) { return MemPod(i, uid); });
  failures += CreateAll(client, resources::Nodes(), "", nodes, [&](int i) {
    return MemNode(node_prefix + std::to_string(i), node_prefix, i);
  });
  return failures == 0 ? 0 : 1;
}

// RSS with a pod and a node informer running and synced over nothing: the caches' fixed cost.
int64_t ResidentWithEmptyInformers(RestClient& client, const std::string& ns) {
  ReflectorOptions nothing;
  nothing.label_selector = "lockstep.dev/memory-test-matches=nothing";
  Informer<Pod> pods(client, resources::Pods(), ns, DecodePod, nothing);
  Informer<Node> nodes(client, resources::Nodes(), "", DecodeNode, nothing);
  pods.Start();
  nodes.Start();
  EXPECT_TRUE(pods.WaitForSync(std::chrono::minutes(1)));
  EXPECT_TRUE(nodes.WaitForSync(std::chrono::minutes(1)));
  malloc_trim(0);
  return testing::ResidentBytes();
}

// Starts the gang scheduler's views (non-terminal pods, every node) through the pools the first
// views filled: they must hold the first views' very objects (`first_pods`), and cost a fraction
// of the first views' `first_view_bytes`.
void ExpectSecondViewShares(RestClient& client, const std::string& ns, const ObjectPools& pools,
                            const Store<Pod>& first_pods, size_t objects, int64_t rss_one_view,
                            double first_view_bytes) {
  ReflectorOptions non_terminal;
  non_terminal.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  Informer<Pod> pods(client, resources::Pods(), ns, DecodePod, non_terminal);
  pods.UseDecodePool(pools.pods);
  Informer<Node> nodes(client, resources::Nodes(), "", DecodeNode);
  nodes.UseDecodePool(pools.nodes);
  pods.Start();
  nodes.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::minutes(3)));
  ASSERT_TRUE(nodes.WaitForSync(std::chrono::minutes(3)));
  ASSERT_EQ(pods.store().Size(), first_pods.Size());
  size_t copies = 0;  // pods the second view holds its own copy of
  for (const std::string& key : pods.store().Keys()) {
    if (pods.store().Get(key) != first_pods.Get(key)) ++copies;
  }
  EXPECT_EQ(copies, 0u) << "the same pod versions were decoded twice";
  malloc_trim(0);
  const double second_view_bytes = static_cast<double>(testing::ResidentBytes() - rss_one_view);
  const double share = second_view_bytes / first_view_bytes;
  std::printf(
      "a second pod and node view through the same pools: %.0f bytes per object, %.2f "
      "of the first view's\n",
      second_view_bytes / static_cast<double>(objects), share);
  ::testing::Test::RecordProperty("second_view_share", std::to_string(share));
  EXPECT_LT(share, kSecondViewShare) << "the second view holds copies of the objects";
}

TEST(InformerMemoryTest, PodAndNodeCachesFitTheFiftyMegabyteBudget) {
  LS_REQUIRE_CLUSTER();
  const int pods = EnvInt("LOCKSTEP_KUBE_MEM_PODS", kFullPods);
  const int nodes = EnvInt("LOCKSTEP_KUBE_MEM_NODES", kFullNodes);
  ASSERT_GT(pods, 0);
  ASSERT_GT(nodes, 0);
  // Namespace and node names are fixed here, before fork, so parent and child agree.
  const std::string suffix = testing::RandomSuffix();
  const std::string ns = "kube-mem-" + suffix;
  const std::string node_prefix = "mem-" + suffix + "-";
  {
    auto admin = testing::Connect();
    ASSERT_TRUE(admin.ok());
    ASSERT_TRUE(admin->client->Create(resources::Namespaces(), "",
                                      {{"apiVersion", "v1"}, {"kind", "Namespace"},
                                       {"metadata", {{"name", ns}}}}).ok());
    ASSERT_TRUE(testing::WaitForDefaultServiceAccount(*admin->client, ns).ok());
  }
  const auto create_start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) _exit(CreateObjects(ns, node_prefix, pods, nodes));
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  const double create_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - create_start).count();
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "creating objects failed";

  auto cluster = testing::Connect();
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster->client->RawGet("/version").ok());  // TLS and curl fully initialised
  malloc_trim(0);
  const int64_t rss_before = testing::ResidentBytes();
  const int64_t rss_fixed = ResidentWithEmptyInformers(*cluster->client, ns);
  malloc_trim(0);
  {
    const ObjectPools pools = NewObjectPools();
    Informer<Pod> pod_informer(*cluster->client, resources::Pods(), ns, DecodePod);
    pod_informer.UseDecodePool(pools.pods);
    pod_informer.AddIndexer("node", [](const Pod& p) {
      return p.node_name.empty() ? std::vector<std::string>{} : std::vector{p.node_name};
    });
    pod_informer.AddIndexer("job", [](const Pod& p) {
      auto it = p.meta.labels.find("lockstep.dev/job-name");
      return it == p.meta.labels.end() ? std::vector<std::string>{} : std::vector{it->second};
    });
    Informer<Node> node_informer(*cluster->client, resources::Nodes(), "", DecodeNode);
    node_informer.UseDecodePool(pools.nodes);
    const auto sync_start = std::chrono::steady_clock::now();
    pod_informer.Start();
    node_informer.Start();
    ASSERT_TRUE(pod_informer.WaitForSync(std::chrono::minutes(3)));
    ASSERT_TRUE(node_informer.WaitForSync(std::chrono::minutes(3)));
    const double sync_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - sync_start).count();
    EXPECT_EQ(pod_informer.store().Size(), static_cast<size_t>(pods));
    EXPECT_GE(node_informer.store().Size(), static_cast<size_t>(nodes));
    EXPECT_EQ(pod_informer.store().ByIndex("job", "job-0").size(), std::min(pods, 8) * 1u);
    malloc_trim(0);
    const int64_t rss_after = testing::ResidentBytes();
    const double mb = 1024.0 * 1024.0;
    std::printf("created %d pods + %d nodes in %.1f s; informers synced in %.1f s\n", pods, nodes,
                create_s, sync_s);
    const size_t objects = pod_informer.store().Size() + node_informer.store().Size();
    const double marginal =
        static_cast<double>(rss_after - rss_fixed) / static_cast<double>(objects);
    const double projected = static_cast<double>(rss_fixed) + marginal * (kFullPods + kFullNodes);
    std::printf("RSS before informers %.1f MB, with empty informers %.1f MB, after %.1f MB: "
                "%.0f bytes per cached object beyond the fixed cost; projected at %d pods + %d "
                "nodes: %.1f MB\n",
                rss_before / mb, rss_fixed / mb, rss_after / mb, marginal, kFullPods, kFullNodes,
                projected / mb);
    std::printf("after: RssAnon %.1f MB, RssFile %.1f MB\n", testing::ResidentBytes("RssAnon") / mb,
                testing::ResidentBytes("RssFile") / mb);
    RecordProperty("rss_after_bytes", std::to_string(rss_after));
    RecordProperty("cache_bytes", std::to_string(rss_after - rss_before));
    EXPECT_LT(rss_after, kBudgetBytes) << "the whole process must stay under 50 MB";
    EXPECT_LT(projected, static_cast<double>(kBudgetBytes))
        << "at " << kFullPods << " pods and " << kFullNodes
        << " nodes these caches would not fit in 50 MB";
    ExpectSecondViewShares(*cluster->client, ns, pools, pod_informer.store(), objects, rss_after,
                           marginal * static_cast<double>(objects));
  }
  // Clean up: nodes are cluster-scoped, the namespace takes its pods with it.
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 32; ++w) {
    workers.emplace_back([&] {
      for (int i; (i = next++) < nodes;) {
        cluster->client->Delete(resources::Nodes(), "", node_prefix + std::to_string(i))
            .status()
            .IgnoreError();
      }
    });
  }
  for (auto& t : workers) t.join();
  cluster->client->Delete(resources::Namespaces(), "", ns).status().IgnoreError();
}

}  // namespace
}  // namespace lockstep::kube
