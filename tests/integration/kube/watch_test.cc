// Watches and informers against the real apiserver, including an apiserver restart mid-stream
// and the 410 Gone -> re-list path.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <vector>

#include "operator/kube/informer.h"
#include "operator/kube/objects.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;
using std::chrono::seconds;

json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"v", value}}}};
}

// What a consumer of the informer's events believes, plus how often each key was added/deleted.
class Model {
 public:
  EventHandlers<MetaObject> Handlers() {
    EventHandlers<MetaObject> h;
    h.on_add = [this](const auto& obj) {
      std::lock_guard<std::mutex> lock(mu_);
      EXPECT_EQ(state_.count(obj->meta.name), 0u) << "duplicate add of " << obj->meta.name;
      state_[obj->meta.name] = obj->meta.resource_version;
      ++adds_[obj->meta.name];
    };
    h.on_update = [this](const auto& old_obj, const auto& new_obj) {
      std::lock_guard<std::mutex> lock(mu_);
      EXPECT_EQ(state_[old_obj->meta.name], old_obj->meta.resource_version);
      state_[new_obj->meta.name] = new_obj->meta.resource_version;
    };
    h.on_delete = [this](const auto& obj, bool tombstone) {
      std::lock_guard<std::mutex> lock(mu_);
      EXPECT_EQ(state_.erase(obj->meta.name), 1u) << "delete of unknown " << obj->meta.name;
      ++deletes_[obj->meta.name];
      if (tombstone) ++tombstones_;
    };
    return h;
  }
  std::map<std::string, std::string> State() {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  int Adds(const std::string& k) {
    std::lock_guard<std::mutex> lock(mu_);
    return adds_[k];
  }
  int Deletes(const std::string& k) {
    std::lock_guard<std::mutex> lock(mu_);
    return deletes_[k];
  }
  int Tombstones() {
    std::lock_guard<std::mutex> lock(mu_);
    return tombstones_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> state_;  // name -> resourceVersion
  std::map<std::string, int> adds_, deletes_;
  int tombstones_ = 0;
};

class WatchTest : public testing::NamespaceTest {
 protected:
  WatchTest() : NamespaceTest("kube-watch") {}

  // The server's current view: name -> resourceVersion.
  std::map<std::string, std::string> ServerState() {
    std::map<std::string, std::string> out;
    std::string rv;
    Status s = client().ListEach(resources::ConfigMaps(), ns(), {}, [&](json&& item) {
      const std::string name = item["metadata"]["name"];
      if (name != "kube-root-ca.crt") out[name] = item["metadata"]["resourceVersion"];
      return Status::Ok();
    }, &rv);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
  // The model without the namespace's automatic kube-root-ca.crt.
  static std::map<std::string, std::string> Visible(std::map<std::string, std::string> m) {
    m.erase("kube-root-ca.crt");
    return m;
  }
};

TEST_F(WatchTest, SurvivesApiserverRestartAndRelistsExactlyAfterGone) {
  Model model;
  Informer<MetaObject> informer(client(), resources::ConfigMaps(), ns(), DecodeMetaObject);
  informer.AddEventHandler(model.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(30)));
  const auto cms = resources::ConfigMaps();
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(client().Create(cms, ns(), ConfigMap(name, "1")).ok());
  }
  ASSERT_TRUE(testing::WaitFor([&] { return Visible(model.State()) == ServerState(); }, seconds(30)));

  // 1. The apiserver restarts under a live watch; the informer reconnects by itself.
  ASSERT_TRUE(testing::ClusterScript("restart apiserver").ok());
  ASSERT_TRUE(client().Create(cms, ns(), ConfigMap("d", "1")).ok());
  ASSERT_TRUE(client().MergePatch(cms, ns(), "a", {{"data", {{"v", "2"}}}}).ok());
  EXPECT_TRUE(testing::WaitFor([&] { return Visible(model.State()) == ServerState(); }, seconds(60)))
      << "informer did not catch up after the apiserver restart";

  // 2. While the informer is stopped: delete, update, create, and a create+delete it never sees.
  // Restarting the apiserver rebuilds its watch cache past our resourceVersion, so the resumed
  // watch gets 410 Gone and the informer must re-list and diff.
  informer.Stop();
  const int64_t lists_before = informer.reflector().lists();
  ASSERT_TRUE(client().Delete(cms, ns(), "b").ok());
  ASSERT_TRUE(client().MergePatch(cms, ns(), "c", {{"data", {{"v", "2"}}}}).ok());
  ASSERT_TRUE(client().Create(cms, ns(), ConfigMap("e", "1")).ok());
  ASSERT_TRUE(client().Create(cms, ns(), ConfigMap("f", "1")).ok());
  ASSERT_TRUE(client().Delete(cms, ns(), "f").ok());
  ASSERT_TRUE(testing::ClusterScript("restart apiserver").ok());
  informer.Start();
  const auto expected = ServerState();
  EXPECT_TRUE(testing::WaitFor([&] { return Visible(model.State()) == expected; }, seconds(60)));
  EXPECT_GT(informer.reflector().lists(), lists_before) << "expected a re-list after 410 Gone";
  informer.Stop();

  EXPECT_EQ(Visible(model.State()), expected);
  for (const char* name : {"a", "b", "c", "d", "e"}) EXPECT_EQ(model.Adds(name), 1) << name;
  EXPECT_EQ(model.Adds("f"), 0);
  EXPECT_EQ(model.Deletes("b"), 1);
  EXPECT_EQ(model.Deletes("f"), 0);
  EXPECT_EQ(model.Tombstones(), 1);  // b's delete was learned from the re-list
  auto c = informer.store().Get(ns() + "/c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->meta.resource_version, expected.at("c"));
}

TEST_F(WatchTest, AncientResourceVersionIsGone) {
  WatchOptions options;
  options.resource_version = "1";
  Status event_error;
  Status s = client().Watch(resources::ConfigMaps(), ns(), options, [&](WatchEvent&& e) {
    if (e.type == WatchEventType::kError) {
      event_error = ApiErrorFromStatusJson(e.object.dump()).ToStatus();
      return false;
    }
    return true;
  });
  // The server answers either with HTTP 410 or with a 410 ERROR event in the stream.
  EXPECT_TRUE(IsGone(s) || IsGone(event_error)) << s << " / " << event_error;
}

TEST_F(WatchTest, SilentStreamIsDetectedAsDead) {
  WatchOptions options;
  options.idle_timeout = seconds(2);
  options.allow_bookmarks = false;
  std::string rv;
  ASSERT_TRUE(client().ListEach(resources::Secrets(), ns(), {}, [](json&&) { return Status::Ok(); },
                                &rv).ok());
  options.resource_version = rv;
  const auto start = std::chrono::steady_clock::now();
  Status s = client().Watch(resources::Secrets(), ns(), options, [](WatchEvent&&) { return true; });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(IsDeadlineExceeded(s)) << s;
  EXPECT_GE(elapsed, seconds(2));
  EXPECT_LT(elapsed, seconds(10));
}

TEST_F(WatchTest, CancelStopsAWatchPromptly) {
  std::atomic<bool> cancel{false};
  WatchOptions options;
  options.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  Status s = client().Watch(resources::ConfigMaps(), ns(), options, [](WatchEvent&&) { return true; });
  canceller.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(3));
}

TEST_F(WatchTest, PodInformerIndexesByNodeAndJob) {
  Informer<Pod> informer(client(), resources::Pods(), ns(), DecodePod);
  informer.AddIndexer("node", [](const Pod& p) {
    return p.node_name.empty() ? std::vector<std::string>{} : std::vector{p.node_name};
  });
  informer.AddIndexer("job", [](const Pod& p) {
    auto it = p.meta.labels.find("lockstep.dev/job-name");
    return it == p.meta.labels.end() ? std::vector<std::string>{} : std::vector{it->second};
  });
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(30)));
  EXPECT_TRUE(informer.HasSynced());
  for (int i = 0; i < 3; ++i) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "w-" + std::to_string(i)},
                              {"labels", {{"lockstep.dev/job-name", "idx"}}}}},
                {"spec", {{"nodeName", i < 2 ? "gpu-node-1" : "gpu-node-2"},
                          {"tolerations", json::array({{{"operator", "Exists"}}})},
                          {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
    auto created = client().Create(resources::Pods(), ns(), pod);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  EXPECT_TRUE(testing::WaitFor(
      [&] { return informer.store().ByIndex("job", "idx").size() == 3; }, seconds(30)));
  EXPECT_EQ(informer.store().ByIndex("node", "gpu-node-1").size(), 2u);
  EXPECT_EQ(informer.store().ByIndex("node", "gpu-node-2").size(), 1u);
}

// A watch with a field selector learns that a pod stopped matching through a DELETED event that
// carries the pod's previous content under the update's resourceVersion (the API server's watch
// cache). Through a decode pool, that content must never stand for the new version in an
// informer that sees the pod as it is: a job whose pods succeeded stayed Running that way.
TEST_F(WatchTest, ASelectorsDeletedEventNeverStandsForTheNewVersionInAPool) {
  auto pool = std::make_shared<DecodePool<Pod>>(&DecodePod);
  ReflectorOptions non_terminal;
  non_terminal.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  Informer<Pod> filtered(client(), resources::Pods(), ns(), DecodePod, non_terminal);
  filtered.UseDecodePool(pool);
  std::mutex mu;
  std::vector<std::shared_ptr<const Pod>> deleted;  // held, as the controller holds a gone pod
  filtered.AddEventHandler({nullptr, nullptr, [&](const std::shared_ptr<const Pod>& pod, bool) {
                              std::lock_guard<std::mutex> lock(mu);
                              deleted.push_back(pod);
                            }});
  filtered.Start();
  ASSERT_TRUE(filtered.WaitForSync(seconds(30)));
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "done"}}},
              {"spec",
               {{"nodeName", "no-such-node"},
                {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
  ASSERT_TRUE(client().Create(resources::Pods(), ns(), pod).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return filtered.store().Get(ns() + "/done") != nullptr; },
                               seconds(30)));
  ASSERT_TRUE(client()
                  .MergePatch(resources::Pods(), ns(), "done",
                              {{"status", {{"phase", "Succeeded"}}}}, "status")
                  .ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return !deleted.empty();
      },
      seconds(30)));
  std::shared_ptr<const Pod> last_matching;
  {
    std::lock_guard<std::mutex> lock(mu);
    last_matching = deleted.front();
  }
  // The premise: the DELETED event's pod is not the succeeded one.
  ASSERT_NE(last_matching->phase, "Succeeded");

  Informer<Pod> all(client(), resources::Pods(), ns(), DecodePod);
  all.UseDecodePool(pool);
  all.Start();
  ASSERT_TRUE(all.WaitForSync(seconds(30)));
  const std::shared_ptr<const Pod> seen = all.store().Get(ns() + "/done");
  ASSERT_NE(seen, nullptr);
  EXPECT_EQ(seen->phase, "Succeeded");
  EXPECT_NE(seen.get(), last_matching.get());
}

}  // namespace
}  // namespace lockstep::kube
