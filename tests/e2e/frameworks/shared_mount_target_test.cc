// SharedMountTarget: the framework e2e binaries' hold on /lockstep/bin, with a temp dir standing
// in for the host path and the lock dir. Two holders in one process behave like two processes:
// each Acquire opens the lock file anew, and flock locks belong to the open file.

#include "tests/e2e/frameworks/shared_mount_target.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace lockstep::e2e {
namespace {

namespace fs = std::filesystem;

class SharedMountTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ls-mount-target-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(SharedMountTargetTest, FirstCreatesLastRemovesWhatWasCreated) {
  const std::string path = (root_ / "lockstep" / "bin").string();
  StatusOr<SharedMountTarget> first = SharedMountTarget::Acquire(path, root_.string());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(fs::is_directory(path));
  StatusOr<SharedMountTarget> second = SharedMountTarget::Acquire(path, root_.string());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->Release(), "");
  EXPECT_TRUE(fs::is_directory(path)) << "removed while another holder still uses it";
  EXPECT_EQ(second->Release(), "");
  EXPECT_FALSE(fs::exists(root_ / "lockstep")) << "the last holder leaves what the first created";
  EXPECT_EQ(second->Release(), "");  // idempotent
}

TEST_F(SharedMountTargetTest, APathThatExistedIsLeftAlone) {
  const std::string path = (root_ / "lockstep" / "bin").string();
  fs::create_directories(root_ / "lockstep");
  {
    StatusOr<SharedMountTarget> only = SharedMountTarget::Acquire(path, root_.string());
    ASSERT_TRUE(only.ok()) << only.status();
    EXPECT_TRUE(fs::is_directory(path));
  }  // the destructor releases
  EXPECT_FALSE(fs::exists(path)) << "bin was created by the holder";
  EXPECT_TRUE(fs::is_directory(root_ / "lockstep")) << "lockstep existed before";
}

TEST_F(SharedMountTargetTest, ADirectoryNoLongerEmptyIsReportedNotRemoved) {
  const std::string path = (root_ / "lockstep" / "bin").string();
  StatusOr<SharedMountTarget> only = SharedMountTarget::Acquire(path, root_.string());
  ASSERT_TRUE(only.ok()) << only.status();
  fs::create_directories(fs::path(path) / "left-behind");
  EXPECT_NE(only->Release(), "");
  EXPECT_TRUE(fs::exists(fs::path(path) / "left-behind"));
}

}  // namespace
}  // namespace lockstep::e2e
