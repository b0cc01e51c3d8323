#include "operator/kube/store.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "operator/kube/objects.h"

namespace lockstep::kube {
namespace {

std::shared_ptr<const Pod> MakePod(const std::string& name, const std::string& node,
                                   const std::string& job) {
  auto pod = std::make_shared<Pod>();
  pod->meta.name = name;
  pod->meta.namespace_ = "ns";
  pod->node_name = node;
  if (!job.empty()) pod->meta.labels["lockstep.dev/job-name"] = job;
  return pod;
}

std::vector<std::string> Names(const std::vector<std::shared_ptr<const Pod>>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p->meta.name);
  std::sort(out.begin(), out.end());
  return out;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.AddIndexer("node", [](const Pod& p) {
      return p.node_name.empty() ? std::vector<std::string>{} : std::vector{p.node_name};
    });
    store_.AddIndexer("job", [](const Pod& p) {
      auto it = p.meta.labels.find("lockstep.dev/job-name");
      return it == p.meta.labels.end() ? std::vector<std::string>{} : std::vector{it->second};
    });
  }
  Store<Pod> store_;
};

TEST_F(StoreTest, IndexesFollowUpdatesAndRemovals) {
  store_.Upsert("ns/a", MakePod("a", "n1", "j"));
  store_.Upsert("ns/b", MakePod("b", "n1", "j"));
  store_.Upsert("ns/c", MakePod("c", "", "other"));
  EXPECT_EQ(Names(store_.ByIndex("node", "n1")), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Names(store_.ByIndex("job", "j")), (std::vector<std::string>{"a", "b"}));

  auto old = store_.Upsert("ns/b", MakePod("b", "n2", "j"));  // rebound to another node
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->node_name, "n1");
  EXPECT_EQ(Names(store_.ByIndex("node", "n1")), (std::vector<std::string>{"a"}));
  EXPECT_EQ(Names(store_.ByIndex("node", "n2")), (std::vector<std::string>{"b"}));

  EXPECT_NE(store_.Remove("ns/a"), nullptr);
  EXPECT_EQ(store_.Remove("ns/a"), nullptr);
  EXPECT_TRUE(store_.ByIndex("node", "n1").empty());
  EXPECT_EQ(store_.Size(), 2u);
  auto c = store_.Get("ns/c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->meta.labels.at("lockstep.dev/job-name"), "other");
  EXPECT_EQ(store_.Get("ns/zzz"), nullptr);
}

TEST_F(StoreTest, ReadersKeepTheirSnapshot) {
  store_.Upsert("ns/a", MakePod("a", "n1", "j"));
  auto held = store_.Get("ns/a");
  ASSERT_NE(held, nullptr);
  store_.Upsert("ns/a", MakePod("a", "n9", "j"));
  EXPECT_EQ(held->node_name, "n1");  // immutable objects: a reader never sees a change
  auto now = store_.Get("ns/a");
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->node_name, "n9");
}

}  // namespace
}  // namespace lockstep::kube
