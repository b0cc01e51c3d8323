// The rendezvous server's hot-spare bookkeeping (launcher/rendezvous/spares.h): who stands by,
// who is promoted first, who serves which node-rank, and who is fenced out.
#include "launcher/rendezvous/spares.h"

#include <gtest/gtest.h>

namespace lockstep::launcher::rendezvous {
namespace {

TEST(SparePoolTest, TheLowestIndexStandbyIsPromotedFirstAndEachOnlyOnce) {
  SparePool pool;
  EXPECT_FALSE(pool.AdmitStandby(2, 12).has_value());
  EXPECT_FALSE(pool.AdmitStandby(0, 10).has_value());
  EXPECT_FALSE(pool.AdmitStandby(1, 11).has_value());
  EXPECT_EQ(pool.standby(), 3u);
  EXPECT_EQ(pool.TakeStandby(), 10);
  EXPECT_EQ(pool.TakeStandby(), 11);
  EXPECT_EQ(pool.standby(), 1u);
  pool.RemoveStandby(12);
  EXPECT_EQ(pool.TakeStandby(), std::nullopt);
  pool.RemoveStandby(99);  // not a standby connection: nothing happens
  EXPECT_EQ(pool.standby(), 0u);
}

TEST(SparePoolTest, AdmissionRefusesADuplicateANegativeIndexAndAPromotedSpare) {
  SparePool pool;
  EXPECT_TRUE(pool.AdmitStandby(-1, 5).has_value());
  EXPECT_FALSE(pool.AdmitStandby(0, 5).has_value());
  std::optional<std::string> dup = pool.AdmitStandby(0, 6);
  ASSERT_TRUE(dup.has_value());
  EXPECT_NE(dup->find("already stands by"), std::string::npos) << *dup;
  ASSERT_EQ(pool.TakeStandby(), 5);
  pool.RecordPromotion(3, 0, 7, "job-spare-0.job.ns.svc");
  std::optional<std::string> again = pool.AdmitStandby(0, 8);
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(again->find("already serves node rank 3"), std::string::npos) << *again;
}

TEST(SparePoolTest, FenceTable) {
  SparePool pool;
  pool.RecordPromotion(3, 1, 7, "job-spare-1.job.ns.svc");
  struct Case {
    const char* name;
    uint32_t node_rank;
    int32_t spare_index;
    bool refused;
    const char* says;
  };
  const Case cases[] = {
      {"a gang pod of an unserved node-rank", 2, -1, false, ""},
      {"the replaced gang pod", 3, -1, true, "is served by spare 1 since round 7"},
      {"the spare that serves it", 3, 1, false, ""},
      {"another spare claiming it", 3, 0, true, "is served by spare 1"},
      {"a spare claiming a node-rank it was never given", 2, 0, true,
       "does not serve node rank 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::optional<std::string> fenced = pool.Fence(c.node_rank, c.spare_index);
    EXPECT_EQ(fenced.has_value(), c.refused);
    if (fenced) {
      EXPECT_NE(fenced->find(c.says), std::string::npos) << *fenced;
    }
  }
}

TEST(SparePoolTest, ServingListsEveryPromotionByNodeRankAndCountsThem) {
  SparePool pool;
  pool.RecordPromotion(5, 0, 1, "s0");
  pool.RecordPromotion(2, 1, 2, "s1");
  pool.RecordPromotion(5, 2, 3, "s2");  // node-rank 5's spare was lost and replaced again
  EXPECT_EQ(pool.promotions(), 3u);
  const std::vector<protocol::SpareServing> serving = pool.Serving();
  ASSERT_EQ(serving.size(), 2u);
  EXPECT_EQ(serving[0], (protocol::SpareServing{2, 1, 2, "s1"}));
  EXPECT_EQ(serving[1], (protocol::SpareServing{5, 2, 3, "s2"}));
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
