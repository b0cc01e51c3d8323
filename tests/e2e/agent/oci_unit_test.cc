// Unit tests of the agent's image path and in-cluster plumbing: image references and configs,
// the image store on a real umoci layout, runtime specs (command/args, user, capabilities,
// securityContext), the kubernetes Service env, the TCP proxy on loopback, the default-scheduler
// choice and the new flags. No cluster, no runc.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/e2e/agent/host_command.h"
#include "tests/e2e/agent/kubernetes_service.h"
#include "tests/e2e/agent/oci_image_store.h"
#include "tests/e2e/agent/oci_runtime.h"
#include "tests/e2e/agent/options.h"
#include "tests/e2e/agent/pod_binder.h"
#include "tests/e2e/agent/pod_volumes.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST(AgentImageStore, NormalizesReferencesAsRuntimesCompareThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lockstep/operator:0.1.0", "lockstep/operator:0.1.0"},
      {"docker.io/lockstep/operator:0.1.0", "lockstep/operator:0.1.0"},
      {"index.docker.io/lockstep/operator:0.1.0", "lockstep/operator:0.1.0"},
      {"busybox", "busybox:latest"},
      {"docker.io/library/busybox", "busybox:latest"},
      {"library/busybox:1.36", "busybox:1.36"},
      {"ghcr.io/lockstep/launcher", "ghcr.io/lockstep/launcher:latest"},
      {"localhost:5000/x", "localhost:5000/x:latest"},  // a registry port is not a tag
      {"x@sha256:abc", "x@sha256:abc"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(NormalizeImageReference(in), want) << in;
}

TEST(AgentImageStore, ParsesTheConfigFieldsARuntimeNeeds) {
  StatusOr<ImageConfig> c = ParseImageConfig(json::parse(R"json({"config": {
      "User": "65532:65532", "Entrypoint": ["/bin/cp"], "Cmd": ["--help"],
      "Env": ["PATH=/bin", "A=1"], "WorkingDir": "/w"}})json"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->user, "65532:65532");
  EXPECT_EQ(c->entrypoint, std::vector<std::string>{"/bin/cp"});
  EXPECT_EQ(c->cmd, std::vector<std::string>{"--help"});
  EXPECT_EQ(c->env, (std::vector<std::string>{"PATH=/bin", "A=1"}));
  EXPECT_EQ(c->working_dir, "/w");
  StatusOr<ImageConfig> empty = ParseImageConfig(json::parse(R"({"config": {"Cmd": null}})"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->cmd.empty() && empty->user.empty());
  EXPECT_TRUE(ParseImageConfig(json::object()).ok());
  EXPECT_FALSE(ParseImageConfig(json::parse(R"({"config": {"Entrypoint": "/bin/sh"}})")).ok());
  EXPECT_FALSE(ParseImageConfig(json::parse(R"({"config": {"User": 0}})")).ok());
}

// A layout made with umoci: one image, no layers, two tags.
class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RunHostCommand({"umoci", "--version"}).ok()) GTEST_SKIP() << "umoci not installed";
    dir_ = ::testing::TempDir() + "/image-store-" + std::to_string(getpid());
    fs::remove_all(dir_);
    layout_ = dir_ + "/layout";
    for (const std::vector<std::string>& step :
         {std::vector<std::string>{"umoci", "init", "--layout", layout_},
          {"umoci", "new", "--image", layout_ + ":t"},
          {"umoci", "config", "--image", layout_ + ":t", "--config.user", "65532:65532",
           "--config.entrypoint", "/app"},
          {"umoci", "tag", "--image", layout_ + ":t", "example/app:1.0"}}) {
      StatusOr<std::string> out = RunHostCommand(step);
      ASSERT_TRUE(out.ok()) << out.status();
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::string layout_;
};

TEST_F(ImageStoreTest, ImportsEveryTagOnceAndFindsByNameOrDigest) {
  ImageStore store(dir_ + "/store");
  StatusOr<std::vector<std::string>> imported = store.Import(layout_);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->size(), 2u);  // "t" and "example/app:1.0", one manifest
  std::optional<StoredImage> app = store.Find("docker.io/example/app:1.0");
  ASSERT_TRUE(app.has_value());
  EXPECT_EQ(app->reference, "example/app:1.0");
  EXPECT_EQ(app->config.user, "65532:65532");
  EXPECT_EQ(app->config.entrypoint, std::vector<std::string>{"/app"});
  EXPECT_TRUE(fs::is_directory(app->rootfs));
  EXPECT_TRUE(store.Find("example/app@" + app->digest).has_value());
  EXPECT_FALSE(store.Find("example/app:2.0").has_value());
  EXPECT_FALSE(store.Find("example/other:1.0").has_value());

  // Unpacked once per digest: a second import leaves the root filesystem alone.
  std::ofstream(app->rootfs + "/marker") << "kept";
  ASSERT_TRUE(store.Import(layout_).ok());
  EXPECT_TRUE(fs::exists(app->rootfs + "/marker"));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/store")) entries += e.is_directory() ? 1 : 0;
  EXPECT_EQ(entries, 2);  // refs/ and one sha256-<hex>/
}

TEST_F(ImageStoreTest, RefusesABlobThatDoesNotMatchItsDigest) {
  // The configuration blob is the only small blob besides the manifest; corrupt every
  // JSON blob that is not the manifest index.
  for (const auto& blob : fs::directory_iterator(layout_ + "/blobs/sha256")) {
    std::ofstream(blob.path(), std::ios::app) << " ";
  }
  ImageStore store(dir_ + "/store");
  StatusOr<std::vector<std::string>> imported = store.Import(layout_);
  EXPECT_EQ(imported.status().code(), StatusCode::kDataLoss) << imported.status();
  EXPECT_FALSE(store.Find("example/app:1.0").has_value());
  EXPECT_TRUE(IsNotFound(store.Import(dir_ + "/nowhere").status()));
}

TEST(AgentOciRuntime, CapabilitiesFollowKubernetesDropThenAdd) {
  const std::vector<std::string> defaults = ContainerCapabilities(json());
  EXPECT_EQ(defaults.size(), 14u);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "CAP_NET_RAW"), defaults.end());
  struct Case {
    const char* security;
    std::vector<std::string> want;  // empty with `size` set: compare sizes only
    size_t size;
  };
  const std::vector<Case> cases = {
      {R"({"capabilities": {"drop": ["ALL"]}})", {}, 0},
      {R"({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}})",
       {"CAP_NET_BIND_SERVICE"},
       1},
      {R"({"capabilities": {"drop": ["all"], "add": ["cap_net_admin"]}})", {"CAP_NET_ADMIN"}, 1},
      {R"({"capabilities": {"add": ["SYS_ADMIN"]}})", {}, 15},
      {R"({"capabilities": {"drop": ["KILL", "NET_RAW"]}})", {}, 12},
      {R"({"capabilities": {"add": ["ALL"], "drop": ["NET_RAW"]}})", {}, 40},
      {R"({"privileged": true, "capabilities": {"drop": ["ALL"]}})", {}, 41},
  };
  for (const Case& c : cases) {
    const std::vector<std::string> got = ContainerCapabilities(json::parse(c.security));
    EXPECT_EQ(got.size(), c.size) << c.security;
    if (!c.want.empty()) {
      EXPECT_EQ(got, c.want) << c.security;
    }
  }
}

OciContainerSpec BaseSpec() {
  OciContainerSpec s;
  s.pause_pid = 4242;
  s.passwd =
      "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65533:nr:/home/nr:/sbin/nologin\n";
  s.group = "root:x:0:\nnonroot:x:65533:\nstaff:x:50:\n";
  return s;
}

ImageConfig Image(std::string user = "") {
  ImageConfig i;
  i.user = std::move(user);
  i.entrypoint = {"/ep"};
  i.cmd = {"--default"};
  i.env = {"PATH=/image/bin", "IMG=1", "OVER=image"};
  return i;
}

TEST(AgentOciRuntime, CommandAndArgsCombineWithTheImageAsKubernetesDoes) {
  struct Case {
    std::vector<std::string> command, args, want;
  };
  const std::vector<Case> cases = {
      {{}, {}, {"/ep", "--default"}},
      {{}, {"--mine"}, {"/ep", "--mine"}},
      {{"/bin/cp"}, {}, {"/bin/cp"}},  // the image's cmd goes with its entrypoint
      {{"/bin/cp"}, {"a", "$(V)"}, {"/bin/cp", "a", "expanded"}},
  };
  for (const Case& c : cases) {
    OciContainerSpec s = BaseSpec();
    s.command = c.command;
    s.args = c.args;
    s.env = {{"V", "expanded"}};
    StatusOr<json> spec = BuildRuntimeSpec(Image(), s, "/rootfs");
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ((*spec)["process"]["args"].get<std::vector<std::string>>(), c.want);
  }
  ImageConfig bare;
  EXPECT_TRUE(IsInvalidArgument(BuildRuntimeSpec(bare, BaseSpec(), "/r").status()));
}

TEST(AgentOciRuntime, UserComesFromSecurityContextElseTheImage) {
  struct Case {
    const char* image_user;
    const char* pod_sc;
    const char* sc;
    uint32_t uid, gid;
  };
  const std::vector<Case> cases = {
      {"", "null", "null", 0, 0},
      {"65532:65532", "null", "null", 65532, 65532},
      {"nonroot", "null", "null", 65532, 65533},  // the passwd entry's group
      {"nonroot:staff", "null", "null", 65532, 50},
      {"65532", "{\"runAsUser\": 1234}", "null", 1234, 0},  // no passwd entry: group 0
      {"", "{\"runAsUser\": 65532}", "null", 65532, 65533},
      {"", "{\"runAsUser\": 1, \"runAsGroup\": 2}", "{\"runAsUser\": 3}", 3, 2},
  };
  for (const Case& c : cases) {
    OciContainerSpec s = BaseSpec();
    s.pod_security = json::parse(c.pod_sc);
    s.security = json::parse(c.sc);
    StatusOr<json> spec = BuildRuntimeSpec(Image(c.image_user), s, "/r");
    ASSERT_TRUE(spec.ok()) << c.image_user << " " << spec.status();
    EXPECT_EQ((*spec)["process"]["user"]["uid"], c.uid) << c.image_user << c.pod_sc << c.sc;
    EXPECT_EQ((*spec)["process"]["user"]["gid"], c.gid) << c.image_user << c.pod_sc << c.sc;
  }
  EXPECT_TRUE(IsInvalidArgument(BuildRuntimeSpec(Image("nobody"), BaseSpec(), "/r").status()));
  OciContainerSpec non_root = BaseSpec();
  non_root.pod_security = {{"runAsNonRoot", true}};
  EXPECT_EQ(BuildRuntimeSpec(Image(), non_root, "/r").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(BuildRuntimeSpec(Image("65532"), non_root, "/r").ok());
  non_root.security = {{"runAsNonRoot", false}};  // the container's word wins
  EXPECT_TRUE(BuildRuntimeSpec(Image(), non_root, "/r").ok());
}

TEST(AgentOciRuntime, SpecJoinsThePodAndAppliesTheSecurityContext) {
  OciContainerSpec s = BaseSpec();
  s.env = {{"OVER", "pod"}, {"POD", "2"}};
  s.working_dir = "/work";
  s.mounts = {{"/host/vol", "/data", true}, {"/host/hosts", "/etc/hosts", false}};
  s.pod_security = {{"supplementalGroups", {42, 7}}, {"fsGroup", 9}};
  s.security = {{"readOnlyRootFilesystem", true}, {"allowPrivilegeEscalation", false}};
  StatusOr<json> spec = BuildRuntimeSpec(Image("nonroot"), s, "/bundle/rootfs");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const json& j = *spec;
  EXPECT_EQ(j["root"], json({{"path", "/bundle/rootfs"}, {"readonly", true}}));
  EXPECT_EQ(j["process"]["noNewPrivileges"], true);
  EXPECT_EQ(j["process"]["cwd"], "/work");
  EXPECT_EQ(j["process"]["user"]["additionalGids"], json({7, 9, 42}));
  EXPECT_EQ(j["process"]["env"],
            json({"PATH=/image/bin", "IMG=1", "OVER=pod", "POD=2", "HOME=/home/nr"}));
  bool net = false;
  bool uts = false;
  for (const json& ns : j["linux"]["namespaces"]) {
    net = net || (ns["type"] == "network" && ns["path"] == "/proc/4242/ns/net");
    uts = uts || (ns["type"] == "uts" && ns["path"] == "/proc/4242/ns/uts");
  }
  EXPECT_TRUE(net && uts) << j["linux"]["namespaces"];
  const json last = j["mounts"].back();
  EXPECT_EQ(last["destination"], "/etc/hosts");
  EXPECT_EQ(j["mounts"][j["mounts"].size() - 2]["options"], json({"rbind", "rprivate", "ro"}));
  EXPECT_FALSE(j["linux"]["maskedPaths"].empty());

  OciContainerSpec plain = BaseSpec();
  StatusOr<json> defaults = BuildRuntimeSpec(ImageConfig{"", {"/x"}, {}, {}, ""}, plain, "/r");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ((*defaults)["root"]["readonly"], false);
  EXPECT_EQ((*defaults)["process"]["noNewPrivileges"], false);
  EXPECT_EQ((*defaults)["process"]["cwd"], "/");
  EXPECT_EQ((*defaults)["process"]["env"][0],
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
}

TEST(AgentKubernetesService, EnvLikeTheKubelet) {
  KubernetesService s{"10.96.0.1", 443, "127.0.0.1", 6443};
  const EnvList env = KubernetesServiceEnv(s);
  const std::map<std::string, std::string> got(env.begin(), env.end());
  EXPECT_EQ(env.front(),
            (std::pair<std::string, std::string>{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}));
  EXPECT_EQ(got.at("KUBERNETES_SERVICE_PORT"), "443");
  EXPECT_EQ(got.at("KUBERNETES_PORT"), "tcp://10.96.0.1:443");
  EXPECT_EQ(got.at("KUBERNETES_PORT_443_TCP_ADDR"), "10.96.0.1");
}

// A loopback listener on a free port; returns the fd and sets *port.
int Listen(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  listen(fd, 8);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

TEST(AgentApiserverProxy, ForwardsBothWaysAndPassesTheEndOfStream) {
  int upstream_port = 0;
  const int upstream = Listen(&upstream_port);
  // The "apiserver": reads until EOF, then answers with what it got, reversed, and closes.
  std::thread server([upstream] {
    const int c = accept(upstream, nullptr, nullptr);
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = read(c, buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
    const std::string reply(got.rbegin(), got.rend());
    ssize_t ignored = write(c, reply.data(), reply.size());
    (void)ignored;
    close(c);
  });
  int proxy_port = 0;
  close(Listen(&proxy_port));  // a free port for the proxy
  StatusOr<std::unique_ptr<ApiserverProxy>> proxy =
      ApiserverProxy::Start("127.0.0.1", proxy_port, "127.0.0.1", upstream_port);
  ASSERT_TRUE(proxy.ok()) << proxy.status();

  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(proxy_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string sent(200 * 1024, 'x');  // more than the proxy buffers at once
  std::string request = sent + "end";
  ASSERT_EQ(write(client, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  shutdown(client, SHUT_WR);  // the server answers only after EOF: the half-close must pass
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = read(client, buf, sizeof(buf))) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  close(client);
  server.join();
  close(upstream);
  EXPECT_EQ(reply, std::string(request.rbegin(), request.rend()));
  EXPECT_FALSE(ApiserverProxy::Start("not-an-ip", 1, "127.0.0.1", 1).ok());
}

TEST(AgentPodBinder, FewestPodsFirstWithinTheNodeSelector) {
  const std::vector<NodeChoice> nodes = {
      {"b", {{"zone", "1"}}, 1}, {"a", {{"zone", "1"}}, 1}, {"c", {{"zone", "2"}}, 0}};
  EXPECT_EQ(ChooseNode(json::object(), nodes), "c");
  EXPECT_EQ(ChooseNode(json::parse(R"({"spec": {"nodeSelector": {"zone": "1"}}})"), nodes), "a");
  EXPECT_EQ(ChooseNode(json::parse(R"({"spec": {"nodeSelector": {"zone": "3"}}})"), nodes),
            std::nullopt);
  EXPECT_EQ(ChooseNode(json::object(), {}), std::nullopt);
}

TEST(AgentPodVolumes, ContainerMountsResolveSubPathAndReadOnly) {
  const std::string root = ::testing::TempDir() + "/container-mounts-" + std::to_string(getpid());
  const VolumeDirs dirs = {{"data", root + "/data"}};
  StatusOr<std::vector<BindMount>> mounts = ContainerMounts(json::parse(R"json({"volumeMounts": [
        {"name": "data", "mountPath": "/d", "readOnly": true},
        {"name": "data", "mountPath": "/s", "subPath": "sub"}]})json"),
                                                            dirs);
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  ASSERT_EQ(mounts->size(), 2u);
  EXPECT_TRUE((*mounts)[0].read_only);
  EXPECT_EQ((*mounts)[1].source, root + "/data/sub");
  EXPECT_TRUE(fs::is_directory(root + "/data/sub"));
  EXPECT_FALSE(
      ContainerMounts(json::parse(R"({"volumeMounts": [{"name": "x", "mountPath": "/x"}]})"), dirs)
          .ok());
  EXPECT_FALSE(ContainerMounts(
                   json::parse(R"({"volumeMounts": [{"name": "data", "mountPath": "rel"}]})"), dirs)
                   .ok());
  fs::remove_all(root);
}

TEST(AgentOptions, ImagesServiceAndScheduling) {
  StatusOr<AgentOptions> o = ParseOptions(
      {"--nodes", "1", "--image-layout", "/l/a", "--image-layout=/l/b", "--apiserver-proxy=true",
       "--schedule-namespace", "ns1", "--schedule-namespace", "ns2"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->image_layouts, (std::vector<std::string>{"/l/a", "/l/b"}));
  EXPECT_TRUE(o->apiserver_proxy);
  EXPECT_EQ(o->schedule_namespaces, (std::vector<std::string>{"ns1", "ns2"}));
  EXPECT_FALSE(ParseOptions({"--nodes", "1"})->apiserver_proxy);
  EXPECT_FALSE(ParseOptions({"--nodes", "1", "--apiserver-proxy=yes"}).ok());
  // Control mode: no nodes needed.
  EXPECT_TRUE(ParseOptions({"--import-image", "/l/a", "--state-dir", "/tmp/s"}).ok());
}

}  // namespace
}  // namespace lockstep::e2e
