// SharedMountTarget and StateDir::EnsurePath: the agents' shared hold on host mount targets,
// with a temp dir standing in for the host paths and the lock dir. Two holders in one process
// behave like two processes (two agents): each Acquire opens the lock file anew, and flock locks
// belong to the open file.

#include "tests/e2e/agent/shared_mount_target.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/agent/state_dir.h"

namespace lockstep::e2e {
namespace {

namespace fs = std::filesystem;

class SharedMountTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ls-mount-target-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    locks_ = (root_ / "locks").string();
    fs::create_directories(locks_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  std::string locks_;
};

TEST_F(SharedMountTargetTest, FirstCreatesLastRemovesWhatWasCreated) {
  const std::string path = (root_ / "lockstep" / "bin").string();
  StatusOr<SharedMountTarget> first = SharedMountTarget::Acquire(path, false, locks_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(fs::is_directory(path));
  StatusOr<SharedMountTarget> second = SharedMountTarget::Acquire(path, false, locks_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(SharedMountTarget::Held(path, locks_));
  EXPECT_EQ(first->Release(), "");
  EXPECT_TRUE(fs::is_directory(path)) << "removed while another holder still uses it";
  EXPECT_EQ(second->Release(), "");
  EXPECT_FALSE(fs::exists(root_ / "lockstep")) << "the last holder leaves what the first created";
  EXPECT_FALSE(SharedMountTarget::Held(path, locks_));
  EXPECT_EQ(second->Release(), "");  // idempotent
}

TEST_F(SharedMountTargetTest, APathThatExistedIsLeftAlone) {
  const std::string path = (root_ / "lockstep" / "bin").string();
  fs::create_directories(root_ / "lockstep");
  {
    StatusOr<SharedMountTarget> only = SharedMountTarget::Acquire(path, false, locks_);
    ASSERT_TRUE(only.ok()) << only.status();
    EXPECT_TRUE(fs::is_directory(path));
  }  // the destructor releases
  EXPECT_FALSE(fs::exists(path)) << "bin was created by the holder";
  EXPECT_TRUE(fs::is_directory(root_ / "lockstep")) << "lockstep existed before";
}

TEST_F(SharedMountTargetTest, ADirectoryNoLongerEmptyIsReportedNotRemovedAndTriedAgainLater) {
  const std::string path = (root_ / "lockstep" / "bin").string();
  StatusOr<SharedMountTarget> only = SharedMountTarget::Acquire(path, false, locks_);
  ASSERT_TRUE(only.ok()) << only.status();
  fs::create_directories(fs::path(path) / "left-behind");
  EXPECT_NE(only->Release(), "");
  EXPECT_TRUE(fs::exists(fs::path(path) / "left-behind"));
  fs::remove(fs::path(path) / "left-behind");
  EXPECT_EQ(SharedMountTarget::RemoveIfUnused(path, false, locks_), "");
  EXPECT_FALSE(fs::exists(root_ / "lockstep")) << "the marker was kept for the next try";
}

TEST_F(SharedMountTargetTest, EachPathHasItsOwnLock) {
  // /var/run/lockstep/rdzv and /lockstep/bin, held by one agent: releasing one must not leave
  // the other behind (one lock for both made the first release fail to take it exclusively).
  const std::string bin = (root_ / "lockstep" / "bin").string();
  const std::string rdzv = (root_ / "run" / "lockstep" / "rdzv").string();
  StatusOr<SharedMountTarget> a = SharedMountTarget::Acquire(bin, false, locks_);
  StatusOr<SharedMountTarget> b = SharedMountTarget::Acquire(rdzv, false, locks_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Release(), "");
  EXPECT_FALSE(fs::exists(bin));
  EXPECT_TRUE(fs::is_directory(rdzv));
  EXPECT_EQ(b->Release(), "");
  EXPECT_FALSE(fs::exists(root_ / "run"));
}

TEST_F(SharedMountTargetTest, AFileTargetIsAnEmptyFileRemovedWithTheDirectoriesMadeForIt) {
  const std::string path = (root_ / "dev" / "termination-log").string();
  StatusOr<SharedMountTarget> only = SharedMountTarget::Acquire(path, true, locks_);
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_TRUE(fs::is_regular_file(path));
  EXPECT_EQ(fs::file_size(path), 0u);
  EXPECT_EQ(only->Release(), "");
  EXPECT_FALSE(fs::exists(root_ / "dev"));
}

TEST_F(SharedMountTargetTest, TheShallowestCreatedComponentOfAnyCreatorBoundsTheRemoval) {
  // Two creators racing: one made run/lockstep, the other only run/lockstep/rdzv after it;
  // whichever appended last, removal goes up to run/lockstep.
  const std::string path = (root_ / "run" / "lockstep" / "rdzv").string();
  fs::create_directories(root_ / "run");
  StatusOr<SharedMountTarget> held = SharedMountTarget::Acquire(path, false, locks_);
  ASSERT_TRUE(held.ok()) << held.status();
  for (const auto& entry : fs::directory_iterator(locks_)) {
    if (entry.path().extension() == ".created") {
      std::ofstream(entry.path(), std::ios::app) << path << "\n";
    }
  }
  EXPECT_EQ(held->Release(), "");
  EXPECT_FALSE(fs::exists(root_ / "run" / "lockstep"));
  EXPECT_TRUE(fs::is_directory(root_ / "run")) << "run existed before";
}

// Two agents' state dirs on one host: the first to exit must not pull a shared target from
// under the other's pods, whichever of them created it.
TEST_F(SharedMountTargetTest, AnExitingAgentLeavesATargetAnotherAgentHolds) {
  const std::string rdzv = (root_ / "run" / "lockstep" / "rdzv").string();
  StateDir first((root_ / "agent-a").string(), locks_);
  StateDir second((root_ / "agent-b").string(), locks_);
  ASSERT_TRUE(first.Claim().ok());
  ASSERT_TRUE(second.Claim().ok());
  ASSERT_TRUE(first.EnsurePath(rdzv, false).ok());   // creates it
  ASSERT_TRUE(second.EnsurePath(rdzv, false).ok());  // finds it
  first.RemoveAll();
  EXPECT_TRUE(fs::is_directory(rdzv)) << "the creator's exit removed a target still in use";
  second.RemoveAll();
  EXPECT_FALSE(fs::exists(root_ / "run")) << "the last agent out leaves what an agent created";
}

TEST_F(SharedMountTargetTest, TheNextClaimRemovesACrashedAgentsTargetsUnlessHeld) {
  const std::string bin = (root_ / "lockstep" / "bin").string();
  const std::string term = (root_ / "dev" / "termination-log").string();
  const std::string state = (root_ / "agent-a").string();
  // The crashed agent: a child that takes both and dies without cleaning up (its locks go
  // with the process; its state dir stays).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StateDir crashed(state, locks_);
    const bool ok = crashed.Claim().ok() && crashed.EnsurePath(bin, false).ok() &&
                    crashed.EnsurePath(term, true).ok();
    _exit(ok ? 0 : 1);  // no destructors: nothing is released cleanly
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  ASSERT_TRUE(fs::is_regular_file(term));
  StateDir other((root_ / "agent-b").string(), locks_);
  ASSERT_TRUE(other.Claim().ok());
  ASSERT_TRUE(other.EnsurePath(bin, false).ok());
  StateDir next(state, locks_);
  ASSERT_TRUE(next.Claim().ok());
  EXPECT_FALSE(fs::exists(root_ / "dev")) << "the crashed run's own target was left";
  EXPECT_TRUE(fs::is_directory(bin)) << "removed while another agent holds it";
  other.RemoveAll();
  EXPECT_FALSE(fs::exists(root_ / "lockstep"));
  next.RemoveAll();
}

}  // namespace
}  // namespace lockstep::e2e
