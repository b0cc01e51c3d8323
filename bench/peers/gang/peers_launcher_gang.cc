// peers_launcher_gang: the launchers of one Lockstep job's kwok pods, for bench/peers' node-loss
// workload (harness/gang.py). A user's Lockstep pods always run lockstep-launcher, and when a node
// goes silent its peers' launchers report it (docs/failures.md "Peer evidence"); kwok pods run
// nothing, so without this the bench would measure only the Lease grace. The launchers are
// tests/integration/peer_loss/launcher_gang.h's: real lockstep-launcher processes, one per pod,
// each pod's IP on lo, test children as ranks.
//
// Protocol, one line each way (stdout carries only these answers; the gang's logs go to DIR):
//   in:  {"run_id": job uid, "token": rendezvous token, "dir": DIR, "nproc": procs per pod,
//         "pods": [{"name", "ip", "node", "uid"}, ...]}   (pod i is node rank i)
//   out: "ready" once every child of round 0 runs, or "error <why>" and exit 1
//   in:  "freeze <i>"   pod i's node dies silently (LauncherGang::Freeze)
//   out: "frozen" or "error <why>"
//   in:  end of input: the launchers are killed and the addresses and rules removed; exit 0.
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/peer_loss/launcher_gang.h"

namespace {

using lockstep::testing::GangOptions;
using lockstep::testing::GangPod;
using lockstep::testing::LauncherGang;

int Fail(const std::string& why) {
  std::cout << "error " << why << std::endl;
  return 1;
}

// The gang the first input line describes, started; null (with the answer printed) otherwise.
std::unique_ptr<LauncherGang> StartGang(const std::string& line) {
  const nlohmann::json in = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object() || !in.contains("pods") || !in["pods"].is_array()) {
    Fail("the first line must be a JSON object with run_id, token, dir and pods");
    return nullptr;
  }
  std::vector<GangPod> pods;
  for (const nlohmann::json& p : in["pods"]) {
    pods.push_back({p.value("name", ""), p.value("ip", ""), p.value("node", ""),
                    p.value("uid", ""), -1});
  }
  GangOptions o;
  o.run_id = in.value("run_id", "");
  o.token = in.value("token", "");
  o.dir = in.value("dir", "");
  o.nproc = in.value("nproc", 1);
  o.launcher_bin = LOCKSTEP_LAUNCHER_BIN;
  o.child_bin = LOCKSTEP_TEST_CHILD_BIN;
  lockstep::StatusOr<std::unique_ptr<LauncherGang>> gang = LauncherGang::Start(pods, o);
  if (!gang.ok()) {
    Fail(gang.status().ToString());
    return nullptr;
  }
  if (!(*gang)->WaitChildren(std::chrono::seconds(60))) {
    Fail("the launchers' children never ran; logs in " + o.dir);
    return nullptr;
  }
  return std::move(*gang);
}

}  // namespace

int main() {
  std::string line;
  if (!std::getline(std::cin, line)) return Fail("no gang on stdin");
  std::unique_ptr<LauncherGang> gang = StartGang(line);
  if (!gang) return 1;
  std::cout << "ready" << std::endl;
  while (std::getline(std::cin, line)) {
    if (line.rfind("freeze ", 0) != 0) {
      std::cout << "error unknown command '" << line << "'" << std::endl;
      continue;
    }
    const lockstep::Status s = gang->Freeze(std::stoul(line.substr(7)));
    std::cout << (s.ok() ? std::string("frozen") : "error " + s.ToString()) << std::endl;
  }
  return 0;
}
