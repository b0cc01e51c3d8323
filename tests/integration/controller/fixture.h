#pragma once
// A gtest fixture: connected client, CRD installed, a namespace of the test's own and a
// lockstep-operator child process watching only that namespace.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::controller::testing {

class OperatorTest : public kube::testing::NamespaceTest {
 protected:
  OperatorTest() : NamespaceTest("ctrl") {}

  void SetUp() override {
    NamespaceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(InstallCrd().ok());
    op_ = std::make_unique<OperatorProcess>(std::vector<std::string>{ns_->name()});
    ASSERT_TRUE(op_->Start().ok());
    ASSERT_TRUE(op_->WaitReady(std::chrono::seconds(30))) << "log: " << op_->log_path();
  }

  void TearDown() override {
    if (op_ && op_->Running()) {
      op_->Kill(SIGTERM);
      EXPECT_EQ(op_->last_exit(), 0) << "the operator did not shut down cleanly; log: "
                                     << op_->log_path();
    }
    NamespaceTest::TearDown();
  }

  nlohmann::json CreateJob(const nlohmann::json& job) {
    StatusOr<nlohmann::json> r = client().Create(kube::resources::TrainingJobs(), ns(), job);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nlohmann::json();
  }

  // Waits until the job has exactly `n` pods. `limit` is longer where the garbage collector
  // acts: it learns of a newly installed CRD (TrainingJob owners) only at its next discovery
  // resync, every 30 s, so on a fresh cluster the first collection can take that long.
  bool WaitForPods(const std::string& job, size_t n,
                   std::chrono::seconds limit = std::chrono::seconds(30)) {
    return kube::testing::WaitFor(
        [&] {
          auto pods = ListJobPods(client(), ns(), job);
          return pods.ok() && pods->size() == n;
        },
        limit, std::chrono::milliseconds(100));
  }

  std::unique_ptr<OperatorProcess> op_;
};

}  // namespace lockstep::controller::testing
