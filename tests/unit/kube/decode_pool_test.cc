#include "operator/kube/decode_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "operator/kube/objects.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

json Pod(const std::string& name, const std::string& uid, const std::string& version) {
  json meta = {{"name", name}, {"namespace", "n"}};
  if (!uid.empty()) meta["uid"] = uid;
  if (!version.empty()) meta["resourceVersion"] = version;
  return {{"metadata", meta}, {"status", {{"phase", "Running"}}}};
}

// Counts the decodes that reach the decoder.
struct CountingPool {
  std::atomic<int> decodes{0};
  DecodePool<kube::Pod> pool{[this](const json& j) {
    ++decodes;
    return DecodePod(j);
  }};
};

TEST(DecodePoolTest, OneVersionIsDecodedOnceForEveryInformer) {
  CountingPool p;
  auto first = p.pool.Decode(Pod("a", "u1", "10"));
  auto second = p.pool.Decode(Pod("a", "u1", "10"));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(p.decodes.load(), 1);
}

TEST(DecodePoolTest, ANewVersionOrANewUidIsANewObject) {
  CountingPool p;
  auto v10 = p.pool.Decode(Pod("a", "u1", "10"));
  auto v11 = p.pool.Decode(Pod("a", "u1", "11"));
  auto other = p.pool.Decode(Pod("a", "u2", "10"));  // deleted and created again: a new uid
  ASSERT_TRUE(v10.ok() && v11.ok() && other.ok());
  EXPECT_NE(v10->get(), v11->get());
  EXPECT_NE(v10->get(), other->get());
  EXPECT_EQ((*v11)->meta.resource_version, "11");
  EXPECT_EQ((*other)->meta.uid, "u2");
  EXPECT_EQ(p.decodes.load(), 3);
}

TEST(DecodePoolTest, AVersionNobodyHoldsIsDecodedAgain) {
  CountingPool p;
  ASSERT_TRUE(p.pool.Decode(Pod("a", "u1", "10")).ok());  // dropped at once
  auto again = p.pool.Decode(Pod("a", "u1", "10"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->meta.name, "a");
  EXPECT_EQ(p.decodes.load(), 2);
}

TEST(DecodePoolTest, ObjectsWithoutIdentityAreDecodedPrivately) {
  CountingPool p;
  auto a = p.pool.Decode(Pod("a", "", "10"));
  auto b = p.pool.Decode(Pod("a", "", "10"));
  auto c = p.pool.Decode(Pod("a", "u1", ""));
  auto d = p.pool.Decode(Pod("a", "u1", ""));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_NE(a->get(), b->get());
  EXPECT_NE(c->get(), d->get());
  EXPECT_EQ(p.pool.entries(), 0u);
}

TEST(DecodePoolTest, DecodeErrorsAreReturnedAndNothingIsKept) {
  CountingPool p;
  auto bad = p.pool.Decode(json{{"metadata", {{"uid", "u1"}, {"resourceVersion", "1"}}}});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(p.pool.entries(), 0u);
  EXPECT_FALSE(p.pool.Decode(json::array()).ok());
  EXPECT_FALSE(p.pool.Decode(json{{"metadata", "x"}}).ok());
}

// Entries of versions nobody holds are swept: the table stays within about twice what is alive.
TEST(DecodePoolTest, ExpiredEntriesAreSwept) {
  CountingPool p;
  std::vector<std::shared_ptr<const kube::Pod>> alive;
  for (int i = 0; i < 20000; ++i) {
    auto pod = p.pool.Decode(
        Pod("p" + std::to_string(i % 100), "u" + std::to_string(i % 100), std::to_string(i)));
    ASSERT_TRUE(pod.ok());
    if (i >= 19900) alive.push_back(*pod);  // the last version of each of 100 pods
  }
  EXPECT_LE(p.pool.entries(), 2048u);
  auto again = p.pool.Decode(Pod("p99", "u99", "19999"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), alive.back().get());
}

// Informers decode on their own threads: every thread gets the one object of each version.
TEST(DecodePoolTest, ThreadsDecodingTheSameVersionsGetOneObjectEach) {
  CountingPool p;
  constexpr int kThreads = 4, kPods = 500;
  std::vector<std::vector<std::shared_ptr<const kube::Pod>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPods; ++i) {
        auto pod = p.pool.Decode(Pod("p" + std::to_string(i), "u" + std::to_string(i), "1"));
        if (pod.ok()) got[t].push_back(*pod);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 1; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), static_cast<size_t>(kPods));
    for (int i = 0; i < kPods; ++i) EXPECT_EQ(got[t][i].get(), got[0][i].get()) << i;
  }
  EXPECT_GE(p.decodes.load(), kPods);
  EXPECT_LE(p.decodes.load(), kThreads * kPods);
}

}  // namespace
}  // namespace lockstep::kube
