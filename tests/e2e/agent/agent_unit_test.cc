// Unit tests of the test node agent's pure parts: no cluster, no root.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/agent/hosts_book.h"
#include "tests/e2e/agent/image_map.h"
#include "tests/e2e/agent/options.h"
#include "tests/e2e/agent/pod_env.h"
#include "tests/e2e/agent/pod_network.h"
#include "tests/e2e/agent/pod_status.h"
#include "tests/e2e/agent/pod_volumes.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;

json TestPod() {
  return json::parse(R"json({
    "metadata": {"name": "job-worker-0", "namespace": "ns1", "uid": "u-1",
                 "labels": {"app": "train"}, "annotations": {"a/b": "c"}},
    "spec": {"nodeName": "agent-node-0", "hostname": "job-worker-0", "subdomain": "job"}})json");
}

ConfigFetcher Fetcher() {
  return [](const std::string& kind,
            const std::string& name) -> StatusOr<std::map<std::string, std::string>> {
    if (kind == "Secret" && name == "s") return std::map<std::string, std::string>{{"k", "sv"}};
    if (kind == "ConfigMap" && name == "cm") {
      return std::map<std::string, std::string>{{"x", "1"}, {"y", "2"}};
    }
    return NotFoundError(kind + " " + name + " not found");
  };
}

TEST(AgentPodEnv, ResolvesValuesFieldRefsAndKeyRefs) {
  const json container = json::parse(R"json({"env": [
    {"name": "A", "value": "plain"},
    {"name": "B", "value": "$(A)-x-$$(A)-$(NOPE)"},
    {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    {"name": "L", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    {"name": "AN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a/b']"}}},
    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "y"}}},
    {"name": "O", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": true}}}
  ], "envFrom": [{"prefix": "P_", "configMapRef": {"name": "cm"}}]})json");
  StatusOr<EnvList> env = ResolveEnv(TestPod(), container, {"10.213.0.5", "10.213.0.1"}, Fetcher());
  ASSERT_TRUE(env.ok()) << env.status();
  const std::map<std::string, std::string> got(env->begin(), env->end());
  const std::map<std::string, std::string> want = {{"P_x", "1"},
                                                   {"P_y", "2"},
                                                   {"A", "plain"},
                                                   {"B", "plain-x-$(A)-$(NOPE)"},
                                                   {"N", "job-worker-0"},
                                                   {"NS", "ns1"},
                                                   {"L", "train"},
                                                   {"AN", "c"},
                                                   {"IP", "10.213.0.5"},
                                                   {"NODE", "agent-node-0"},
                                                   {"S", "sv"},
                                                   {"C", "2"},
                                                   {"O", ""}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(env->front().first, "P_x");  // envFrom comes first, env overrides it
}

TEST(AgentPodEnv, MissingSecretOrUnknownFieldIsAnError) {
  const json missing = json::parse(
      R"json({"env": [{"name": "S",
                       "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}]})json");
  EXPECT_TRUE(IsNotFound(ResolveEnv(TestPod(), missing, {}, Fetcher()).status()));
  const json bad = json::parse(
      R"json({"env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.nope"}}}]})json");
  EXPECT_TRUE(IsInvalidArgument(ResolveEnv(TestPod(), bad, {}, Fetcher()).status()));
}

TEST(AgentHosts, ResolvesEveryPodOfTheSubdomain) {
  HostsEntry self{"10.213.0.2", "job-w-0", "job", "ns1"};
  HostsEntry peer{"10.213.0.3", "job-w-1", "job", "ns1"};
  const std::string text = RenderHosts(self, {self, peer});
  EXPECT_NE(text.find("10.213.0.2\tjob-w-0.job.ns1.svc.cluster.local job-w-0.job.ns1.svc "
                      "job-w-0.job.ns1 job-w-0.job job-w-0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("10.213.0.3\tjob-w-1.job.ns1.svc.cluster.local"), std::string::npos);
  EXPECT_EQ(text.find("10.213.0.2", text.find("10.213.0.3")), std::string::npos);  // once
}

TEST(AgentHosts, BookRewritesPeersFilesInPlace) {
  const std::string dir = ::testing::TempDir() + "/hosts-book";
  std::filesystem::create_directories(dir);
  HostsBook book;
  ASSERT_TRUE(book.Add("ns1/a", {"10.0.0.2", "a", "job", "ns1"}, dir + "/a").ok());
  ASSERT_TRUE(book.Add("ns1/b", {"10.0.0.3", "b", "job", "ns1"}, dir + "/b").ok());
  ASSERT_TRUE(book.Add("ns2/c", {"10.0.0.4", "c", "job", "ns2"}, dir + "/c").ok());
  auto read = [&](const std::string& f) {
    std::ifstream in(dir + "/" + f);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_NE(read("a").find("b.job.ns1.svc.cluster.local"), std::string::npos);
  EXPECT_EQ(read("a").find("c.job.ns2"), std::string::npos);  // other namespace
  book.Remove("ns1/b");
  EXPECT_EQ(read("a").find("b.job.ns1"), std::string::npos);
}

TEST(AgentImageMap, LauncherAndDirectoryRulesAndVenvPath) {
  const std::string root = ::testing::TempDir() + "/image-root";
  std::filesystem::create_directories(root + "/examples/x");
  std::filesystem::create_directories(root + "/bin");
  AgentOptions o;
  o.launcher_binary = "/build/bin/lockstep-launcher";
  o.launcher_image = "ghcr.io/lockstep/launcher";
  o.python = "/repo/.venv/bin/python";
  o.image_rules = {{"lockstep/examples", root}};
  ImageMapper m(o);
  StatusOr<ResolvedCommand> cp = m.Resolve("ghcr.io/lockstep/launcher:v1",
                                           {"cp", "/lockstep-launcher", "/lockstep/bin/x"}, {});
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->argv,
            (std::vector<std::string>{"cp", "/build/bin/lockstep-launcher", "/lockstep/bin/x"}));
  EXPECT_EQ(cp->path_prefix, std::vector<std::string>{"/repo/.venv/bin"});
  StatusOr<ResolvedCommand> py = m.Resolve("lockstep/examples:dev", {"python"},
                                           {"/examples/x/train.py", "/etc/passwd", "--a"});
  ASSERT_TRUE(py.ok());
  EXPECT_EQ(py->argv, (std::vector<std::string>{"python", root + "/examples/x/train.py",
                                                "/etc/passwd", "--a"}));
  EXPECT_EQ(py->path_prefix, (std::vector<std::string>{root + "/bin", "/repo/.venv/bin"}));
  EXPECT_FALSE(m.Resolve("busybox", {}, {"a"}).ok());  // no entrypoint without an image
}

TEST(AgentIpAllocator, SkipsNetworkBridgeAndBroadcast) {
  StatusOr<IpAllocator> ips = IpAllocator::Parse("10.213.7.9/30");
  ASSERT_TRUE(ips.ok());
  EXPECT_EQ(ips->BridgeAddress(), "10.213.7.9");
  EXPECT_EQ(*ips->Allocate(), "10.213.7.10");
  EXPECT_FALSE(ips->Allocate().ok());  // .11 is the broadcast address
  ips->Release("10.213.7.10");
  EXPECT_EQ(*ips->Allocate(), "10.213.7.10");
  EXPECT_FALSE(IpAllocator::Parse("10.0.0.0").ok());
  EXPECT_FALSE(IpAllocator::Parse("10.0.0.0/31").ok());
}

TEST(AgentOptions, NodesAndImageMaps) {
  StatusOr<AgentOptions> o = ParseOptions(
      {"--nodes", "2", "--gpus=4", "--image-map", "img/=/opt/x", "--node-name", "extra"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->node_names, (std::vector<std::string>{"extra", "agent-node-0", "agent-node-1"}));
  EXPECT_EQ(o->gpus, 4);
  ASSERT_EQ(o->image_rules.size(), 1u);
  EXPECT_EQ(o->image_rules[0].dir, "/opt/x");
  EXPECT_FALSE(ParseOptions({}).ok());
  EXPECT_FALSE(ParseOptions({"--nodes", "1", "--image-map", "x=relative"}).ok());
  EXPECT_FALSE(ParseOptions({"--nodes", "1", "--bridge", "waytoolongname"}).ok());
  EXPECT_TRUE(ParseOptions({"--fail-node", "n", "--state-dir", "/tmp/s"}).ok());
}

TEST(AgentPodStatus, RendersKubeletShape) {
  PodRecord r;
  r.phase = "Failed";
  r.pod_ip = "10.213.0.2";
  r.host_ip = "10.213.0.1";
  r.SetCondition("Ready", false, "t1", "PodCompleted");
  ContainerRecord c = NewContainerRecord("main", "img");
  c.state = ContainerRecord::State::kTerminated;
  c.exit_code = 3;
  c.reason = "Error";
  c.message = "bad things";
  c.finished_at = "t2";
  r.containers.push_back(c);
  const json s = RenderPodStatus(r);
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["podIP"], "10.213.0.2");
  EXPECT_EQ(s["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
  EXPECT_EQ(s["containerStatuses"][0]["state"]["terminated"]["message"], "bad things");
  EXPECT_EQ(s["conditions"][0]["type"], "Ready");
  r.SetCondition("Ready", false, "t3");
  EXPECT_EQ(RenderPodStatus(r)["conditions"][0]["lastTransitionTime"], "t1");  // unchanged
  r.SetCondition("Ready", true, "t4");
  EXPECT_EQ(RenderPodStatus(r)["conditions"][0]["lastTransitionTime"], "t4");
}

TEST(AgentHostPath, TypesCreateOrRequireLikeTheKubelet) {
  const std::string root = ::testing::TempDir() + "/hostpath-" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  EXPECT_FALSE(CheckHostPath(root + "/ckpt", "Directory").ok());
  ASSERT_TRUE(CheckHostPath(root + "/ckpt", "DirectoryOrCreate").ok());
  EXPECT_TRUE(std::filesystem::is_directory(root + "/ckpt"));
  EXPECT_TRUE(CheckHostPath(root + "/ckpt", "Directory").ok());
  EXPECT_FALSE(CheckHostPath(root + "/ckpt", "File").ok());
  ASSERT_TRUE(CheckHostPath(root + "/ckpt/f", "FileOrCreate").ok());
  EXPECT_TRUE(CheckHostPath(root + "/ckpt/f", "File").ok());
  EXPECT_TRUE(CheckHostPath(root + "/missing", "").ok());  // no type: no check, as in Kubernetes
  EXPECT_FALSE(CheckHostPath(root + "/ckpt", "Socket").ok());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace lockstep::e2e
