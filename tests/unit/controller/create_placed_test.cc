// ChooseCreatePath: which creates are offered to the scheduler to be created placed, as a table.
#include "operator/controller/create_placed.h"

#include <gtest/gtest.h>

#include "operator/api/children.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using nlohmann::json;
using testing::InAttempt;
using testing::Job;
using testing::Pod;
using testing::Terminating;

json Create(int index, int attempt) {
  return {{"metadata",
           {{"name", "job-worker-" + std::to_string(index)},
            {"labels", {{std::string(api::kLabelAttempt), std::to_string(attempt)}}}}},
          {"spec", {{"schedulerName", "lockstep"}, {"containers", json::array()}}}};
}

TEST(ChooseCreatePathTest, Table) {
  struct Row {
    std::string name;
    int attempt;  // the job's status.attempt
    std::vector<kube::Pod> observed;
    std::vector<json> creates;
    CreatePath want;
  };
  json gated = Create(1, 0);
  gated["spec"]["schedulingGates"] = json::array({{{"name", "kueue.x-k8s.io/topology"}}});
  json placed = Create(1, 0);
  placed["spec"]["nodeName"] = "n1";
  const std::vector<Row> rows = {
      {"a whole gang, nothing exists", 0, {}, {Create(0, 0), Create(1, 0)}, CreatePath::kPlaced},
      {"nothing to create", 0, {}, {}, CreatePath::kUnplaced},
      {"a refill: a pod of this attempt exists", 0,
       {InAttempt(Pod("worker", 0, "Running"), 0)}, {Create(1, 0)}, CreatePath::kUnplaced},
      {"a terminating pod of this attempt still counts", 0,
       {Terminating(InAttempt(Pod("worker", 0, "Running"), 0))}, {Create(0, 0), Create(1, 0)},
       CreatePath::kUnplaced},
      {"a pod of no known attempt", 0, {Pod("worker", 0, "Running")},
       {Create(0, 0), Create(1, 0)}, CreatePath::kUnplaced},
      {"a restart: the old attempt's pods are leaving", 1,
       {Terminating(InAttempt(Pod("worker", 0, "Running"), 0)),
        Terminating(InAttempt(Pod("worker", 1, "Running"), 0))},
       {Create(0, 1), Create(1, 1)}, CreatePath::kPlaced},
      {"a create of another attempt", 1, {}, {Create(0, 1), Create(1, 0)},
       CreatePath::kUnplaced},
      {"scheduling gates (nodeName is refused with them)", 0, {}, {Create(0, 0), gated},
       CreatePath::kUnplaced},
      {"a pod placed already", 0, {}, {Create(0, 0), placed}, CreatePath::kUnplaced},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    CachedJob job = Job(2);
    job.job.status.attempt = row.attempt;
    const CreatePathChoice choice = ChooseCreatePath(job.job, row.observed, row.creates);
    EXPECT_EQ(choice.path, row.want) << choice.why;
    if (row.want == CreatePath::kUnplaced) {
      EXPECT_FALSE(choice.why.empty());
    }
  }
}

}  // namespace
}  // namespace lockstep::controller
