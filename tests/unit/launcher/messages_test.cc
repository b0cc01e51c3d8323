#include "launcher/rendezvous/messages.h"

#include <gtest/gtest.h>

#include "tests/unit/launcher/frame_util.h"

namespace lockstep::launcher::rendezvous {
namespace {

using testing::Only;  // tests/unit/launcher/frame_util.h

TEST(MessagesTest, JoinRoundTrips) {
  Join j;
  j.run_id = "job-uid";
  j.attempt = 3;
  j.node_rank = 17;
  j.role = "worker";
  j.role_index = 17;
  j.host = "job-worker-17.job.ns.svc";
  j.port = 2222;
  j.nproc = 8;
  j.want_peer_table = true;
  j.mac = std::string(kMacBytes, 'm');
  Frame f = Only(Encode(j));
  EXPECT_EQ(f.type, static_cast<uint8_t>(MessageType::kJoin));
  StatusOr<Join> back = DecodeJoin(f.body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_id, "job-uid");
  EXPECT_EQ(back->attempt, 3u);
  EXPECT_EQ(back->node_rank, 17u);
  EXPECT_EQ(back->host, "job-worker-17.job.ns.svc");
  EXPECT_EQ(back->nproc, 8u);
  EXPECT_TRUE(back->want_peer_table);
  EXPECT_EQ(back->mac, j.mac);
}

TEST(MessagesTest, WorldRoundTripsWithNcclId) {
  WorldMsg w;
  w.attempt = 1;
  w.group_rank = 2;
  w.nnodes = 4;
  w.world_size = 32;
  w.first_rank = 16;
  w.nproc = 8;
  w.master_host = "10.0.0.1";
  w.nccl_id = std::string(kNcclIdBytes, '\x7f');
  w.role_first_rank = 8;
  w.role_world_size = 24;
  StatusOr<WorldMsg> back = DecodeWorld(Only(Encode(w)).body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->first_rank, 16u);
  EXPECT_EQ(back->nccl_id, w.nccl_id);
  EXPECT_EQ(back->role_first_rank, 8u);
  EXPECT_EQ(back->role_world_size, 24u);
}

TEST(MessagesTest, WorldRejectsRoleRanksOutsideTheRoleOrTheWorld) {
  WorldMsg w;
  w.nnodes = 2;
  w.world_size = 8;
  w.first_rank = 4;
  w.nproc = 4;
  w.role_first_rank = 4;
  w.role_world_size = 8;
  ASSERT_TRUE(DecodeWorld(Only(Encode(w)).body).ok());
  w.role_world_size = 6;  // role ranks 4..7 exceed the role of 6
  EXPECT_FALSE(DecodeWorld(Only(Encode(w)).body).ok());
  w.role_world_size = 12;  // a role larger than the world
  EXPECT_FALSE(DecodeWorld(Only(Encode(w)).body).ok());
}

TEST(MessagesTest, WorldRejectsInconsistentRanks) {
  WorldMsg w;
  w.group_rank = 0;
  w.nnodes = 1;
  w.world_size = 4;
  w.first_rank = 2;
  w.nproc = 4;  // ranks 2..5 exceed the world of 4
  EXPECT_FALSE(DecodeWorld(Only(Encode(w)).body).ok());
  w.first_rank = 0;
  w.nccl_id = "short";
  EXPECT_FALSE(DecodeWorld(Only(Encode(w)).body).ok());
}

TEST(MessagesTest, RejectsTruncationAndTrailingBytes) {
  Abort a;
  a.attempt = 2;
  a.reason = "peer-lost";
  a.node_rank = 5;
  a.message = "node 5 lost";
  a.restartable = false;
  const std::string body = Only(Encode(a)).body;
  StatusOr<Abort> ok = DecodeAbort(body);
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(ok->restartable);
  EXPECT_EQ(ok->node_rank, 5);
  for (size_t cut = 0; cut < body.size(); ++cut) {
    EXPECT_FALSE(DecodeAbort(body.substr(0, cut)).ok()) << cut;
  }
  EXPECT_FALSE(DecodeAbort(body + "x").ok());
}

TEST(MessagesTest, PeerTableRejectsLyingCount) {
  std::string body("\x00\x01\x00\x00", 4);  // claims 65536 peers, carries none
  EXPECT_FALSE(DecodePeerTable(body).ok());
  PeerTable t;
  t.peers.push_back({0, 0, "worker", 0, "h0", 1, 2, 0});
  t.peers.push_back({1, 3, "worker", 3, "h3", 1, 2, 2});
  StatusOr<PeerTable> back = DecodePeerTable(Only(Encode(t)).body);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->peers.size(), 2u);
  EXPECT_EQ(back->peers[1].host, "h3");
  EXPECT_EQ(back->peers[1].first_rank, 2u);
}

TEST(MessagesTest, DecodeAnyRejectsUnknownType) {
  Frame f;
  f.type = 200;
  EXPECT_FALSE(DecodeAny(f).ok());
  f.type = static_cast<uint8_t>(MessageType::kHeartbeat);
  f.body = std::string(4, '\0');
  EXPECT_TRUE(DecodeAny(f).ok());
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
