// The kubelet log endpoint's pure parts: the request the apiserver sends for `kubectl logs`
// and where --tail starts in a log file.
#include "tests/e2e/agent/container_logs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace lockstep::e2e {
namespace {

TEST(ContainerLogTarget, ParsesWhatKubectlLogsSends) {
  StatusOr<ContainerLogRequest> r = ParseContainerLogTarget(
      "/containerLogs/default/pytorch-ddp-worker-0/"
      "trainer?follow=true&tailLines=20&limitBytes=500");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ns, "default");
  EXPECT_EQ(r->pod, "pytorch-ddp-worker-0");
  EXPECT_EQ(r->container, "trainer");
  EXPECT_TRUE(r->follow);
  EXPECT_EQ(r->tail_lines, 20);
  EXPECT_EQ(r->limit_bytes, 500);
  EXPECT_FALSE(r->previous);

  StatusOr<ContainerLogRequest> plain = ParseContainerLogTarget("/containerLogs/a/b/c");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->follow);
  EXPECT_FALSE(plain->tail_lines.has_value());
  // Parameters the agent does not apply are accepted (the apiserver passes them through).
  EXPECT_TRUE(ParseContainerLogTarget("/containerLogs/a/b/c?sinceSeconds=10&timestamps=true").ok());
}

TEST(ContainerLogTarget, RefusesWhatCouldWalkOutOrIsMalformed) {
  struct Case {
    const char* target;
    StatusCode code;
  };
  for (const Case& c : {Case{"/containerLogs/a/../c", StatusCode::kNotFound},
                        Case{"/containerLogs/a/b", StatusCode::kNotFound},
                        Case{"/containerLogs/a/b/c/d", StatusCode::kNotFound},
                        Case{"/containerLogs/a/B/c", StatusCode::kNotFound},
                        Case{"/containerLogs/a/.hidden/c", StatusCode::kNotFound},
                        Case{"/containerLogs//b/c", StatusCode::kNotFound},
                        Case{"/exec/a/b/c", StatusCode::kNotFound},
                        Case{"/containerLogs/a/b/c?tailLines=-1", StatusCode::kInvalidArgument},
                        Case{"/containerLogs/a/b/c?tailLines=x", StatusCode::kInvalidArgument},
                        Case{"/containerLogs/a/b/c?limitBytes=0", StatusCode::kInvalidArgument},
                        Case{"/containerLogs/a/b/c?follow=maybe", StatusCode::kInvalidArgument}}) {
    StatusOr<ContainerLogRequest> r = ParseContainerLogTarget(c.target);
    EXPECT_EQ(r.status().code(), c.code) << c.target << ": " << r.status();
  }
}

TEST(TailStart, CountsLinesFromTheEndWithTheFinalNewlineEndingTheLastLine) {
  struct Case {
    const char* text;
    int64_t lines;
    int64_t want;
  };
  for (const Case& c : {Case{"a\nb\nc\n", 1, 4}, Case{"a\nb\nc\n", 2, 2}, Case{"a\nb\nc\n", 3, 0},
                        Case{"a\nb\nc\n", 9, 0}, Case{"a\nb\nc", 1, 4}, Case{"a\nb\nc", 2, 2},
                        Case{"", 5, 0}, Case{"a\nb\n", 0, 4}, Case{"\n\n\n", 2, 1}}) {
    EXPECT_EQ(TailStart(c.text, 0, c.lines), c.want) << '"' << c.text << "\" lines " << c.lines;
  }
  // A tail that starts inside the file and holds too few lines asks for more.
  EXPECT_EQ(TailStart("x\ny\n", 100, 5), std::nullopt);
  EXPECT_EQ(TailStart("x\ny\n", 100, 1), 102);
}

TEST(TailStart, OfAFileLargerThanOneReadBlock) {
  const std::string path = testing::TempDir() + "/tail_test.log";
  {
    std::ofstream out(path);
    for (int i = 0; i < 100000; ++i) out << "line " << i << "\n";  // ~1.1 MB, many blocks
  }
  StatusOr<int64_t> start = TailStartOfFile(path, 30000);
  ASSERT_TRUE(start.ok()) << start.status();
  std::ifstream in(path);
  in.seekg(*start);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "line 70000");
  EXPECT_EQ(*TailStartOfFile(path, 1000000), 0);
  std::filesystem::remove(path);
}

TEST(ContainerState, RunningUntilTerminatedOrThePodIsFinished) {
  const nlohmann::json pod = nlohmann::json::parse(R"({
    "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "trainer"}]},
    "status": {"phase": "Running",
               "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 0}}}],
               "containerStatuses": [{"name": "trainer", "state": {"running": {}}}]}})");
  EXPECT_TRUE(PodHasContainer(pod, "init"));
  EXPECT_TRUE(PodHasContainer(pod, "trainer"));
  EXPECT_FALSE(PodHasContainer(pod, "sidecar"));
  EXPECT_FALSE(ContainerStillRunning(pod, "init"));
  EXPECT_TRUE(ContainerStillRunning(pod, "trainer"));
  nlohmann::json done = pod;
  done["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(ContainerStillRunning(done, "trainer"));
  EXPECT_TRUE(ContainerStillRunning(nlohmann::json::object(), "trainer"));  // no status yet
}

}  // namespace
}  // namespace lockstep::e2e
