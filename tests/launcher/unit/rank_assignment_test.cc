#include "launcher/rendezvous/rank_assignment.h"

#include <gtest/gtest.h>

namespace lockstep::launcher::rendezvous {
namespace {

Member M(uint32_t node_rank, uint32_t nproc) {
  return Member{node_rank, "worker", node_rank, "h" + std::to_string(node_rank), 0, nproc};
}

TEST(RanksTest, RanksFollowNodeRankRegardlessOfJoinOrder) {
  StatusOr<Assignment> a = AssignRanks({M(2, 4), M(0, 4), M(3, 4), M(1, 4)});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->world_size, 16u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a->peers[i].node_rank, i);
    EXPECT_EQ(a->peers[i].group_rank, i);
    EXPECT_EQ(a->peers[i].first_rank, 4 * i);
  }
}

TEST(RanksTest, ElasticGapsCompactAndMixedNprocAccumulate) {
  StatusOr<Assignment> a = AssignRanks({M(5, 1), M(0, 2), M(3, 3)});
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->peers.size(), 3u);
  EXPECT_EQ(a->peers[0].node_rank, 0u);
  EXPECT_EQ(a->peers[1].node_rank, 3u);
  EXPECT_EQ(a->peers[1].group_rank, 1u);
  EXPECT_EQ(a->peers[1].first_rank, 2u);
  EXPECT_EQ(a->peers[2].first_rank, 5u);
  EXPECT_EQ(a->world_size, 6u);
}

TEST(RanksTest, RejectsDuplicatesAndZeroNproc) {
  EXPECT_FALSE(AssignRanks({M(1, 1), M(1, 1)}).ok());
  EXPECT_FALSE(AssignRanks({M(0, 0)}).ok());
}

TEST(RanksTest, RejectsWorldSizeOverflow) {
  std::vector<Member> ms;
  for (uint32_t i = 0; i < 3; ++i) ms.push_back(M(i, 1u << 30));
  EXPECT_FALSE(AssignRanks(ms).ok());
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
