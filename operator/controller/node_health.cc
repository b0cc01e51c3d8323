#include "operator/controller/node_health.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "common/log.h"
#include "operator/controller/controller_metrics.h"
#include "operator/controller/silence_guard.h"
#include "operator/kube/informer.h"

namespace lockstep::controller {
namespace {

constexpr char kNodeLeaseNamespace[] = "kube-node-lease";
constexpr auto kTick = std::chrono::seconds(1);
// Graces that end this close together are judged in one pass (NextTickDelay). Above zero, since
// Judge's test is strictly past the grace.
constexpr auto kCoalesce = std::chrono::milliseconds(250);

// A Lease's renewTime is a MicroTime: ParseTime keeps its microseconds.
std::optional<api::Time> ParseOptionalTime(const std::string& text) {
  if (text.empty()) return std::nullopt;
  StatusOr<api::Time> t = kube::ParseTime(text);
  if (!t.ok()) return std::nullopt;
  return *t;
}

NodeVerdict Lost(const std::string& name, std::string reason, const std::string& evidence,
                 std::optional<api::Time> failed_at) {
  NodeVerdict v;
  v.lost = true;
  v.reason = std::move(reason);
  v.message = "node " + name + ": " + evidence;
  v.failed_at = failed_at;
  return v;
}

// "Ready=False (KubeletNotReady: container runtime down)", dropping empty parts.
std::string ReadyEvidence(const kube::Condition& ready) {
  std::string out = "Ready=" + ready.status;
  std::string why = ready.reason;
  if (!ready.message.empty()) why += (why.empty() ? "" : ": ") + ready.message;
  if (!why.empty()) out += " (" + why + ")";
  return out;
}

std::string TaintText(const kube::Taint& t) {
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
}

enum class Change { kNone, kLost, kNewReason };

// Records the verdict and says what is news: a new loss, or a lost node's new reason (the node
// controller turns a silent node's lease expiry into Ready=Unknown 20-30 s later).
Change Transition(std::unordered_map<std::string, std::string>& lost, const std::string& node,
                  const NodeVerdict& v) {
  if (!v.lost) {
    lost.erase(node);
    return Change::kNone;
  }
  auto [it, inserted] = lost.try_emplace(node, v.reason);
  if (inserted) return Change::kLost;
  if (it->second == v.reason) return Change::kNone;
  it->second = v.reason;
  return Change::kNewReason;
}

// AssessNode's verdict before the taints are attached.
NodeVerdict Judge(const std::string& name, const kube::Node* node, const kube::Lease* lease,
                  api::Time now, const NodeHealthOptions& options, api::Time leases_fresh_since) {
  // 1. Gone: nothing left to run on.
  if (node == nullptr) return Lost(name, "NodeDeleted", "deleted", std::nullopt);
  const std::optional<api::Time> renewed =
      lease != nullptr ? ParseOptionalTime(lease->renew_time) : std::nullopt;

  const bool lease_expired = renewed && leases_fresh_since <= now &&
                             now - std::max(*renewed, leases_fresh_since) > options.lease_grace;

  // 2. The kubelet (or the node controller on its behalf) says NotReady / Unknown. When the
  // heartbeat also stopped before the condition flipped (the node controller marks Unknown
  // 40 s after the lease stopped), the node died at its last renewal; a live kubelet reporting
  // NotReady keeps renewing, and then the flip itself is the failure.
  if (node->ready && (node->ready->status == "False" || node->ready->status == "Unknown")) {
    std::optional<api::Time> failed_at = ParseOptionalTime(node->ready->last_transition_time);
    if (lease_expired && (!failed_at || *renewed < *failed_at)) failed_at = renewed;
    return Lost(name, node->ready->status == "False" ? "NodeNotReady" : "NodeUnreachable",
                ReadyEvidence(*node->ready), failed_at);
  }

  // 3. A NoExecute taint evicts pods that do not tolerate it; the gang cannot wait for that.
  for (const kube::Taint& taint : node->taints) {
    if (taint.effect != "NoExecute") continue;
    return Lost(name, "NodeTainted", "tainted " + TaintText(taint),
                ParseOptionalTime(taint.time_added));
  }

  // 4. Heartbeat: the Lease is the only signal of a kubelet that died silently.
  if (lease_expired) {
    const auto silent = std::chrono::duration_cast<std::chrono::seconds>(
        now - std::max(*renewed, leases_fresh_since));
    return Lost(name, "NodeLeaseExpired",
                "lease not renewed for " + std::to_string(silent.count()) + "s", renewed);
  }

  // 5. Cordoned: a drain is coming; restart off the node now only when asked to.
  if (options.restart_on_cordon && node->unschedulable) {
    std::optional<api::Time> failed_at;
    for (const kube::Taint& taint : node->taints) {
      if (taint.key == "node.kubernetes.io/unschedulable") {
        failed_at = ParseOptionalTime(taint.time_added);
      }
    }
    return Lost(name, "NodeCordoned", "cordoned", failed_at);
  }
  return NodeVerdict{};
}

}  // namespace

bool MarkedByTaintEviction(const kube::Pod& pod) {
  const kube::Condition* c = pod.FindCondition("DisruptionTarget");
  return c != nullptr && c->status == "True" && c->reason == "DeletionByTaintManager";
}

NodeVerdict TaintEvictionVerdict(const kube::Pod& pod) {
  if (pod.node_name.empty() || !MarkedByTaintEviction(pod)) return {};
  const kube::Condition* c = pod.FindCondition("DisruptionTarget");
  NodeVerdict v;
  v.lost = true;
  v.reason = "NodeTainted";
  v.message = "node " + pod.node_name + ": the taint manager is deleting pod " + pod.meta.name +
              " for a NoExecute taint" + (c->message.empty() ? "" : " (" + c->message + ")");
  return v;
}

std::optional<api::Time> LeaseDeadline(const kube::Lease& lease, const NodeHealthOptions& options,
                                       api::Time silence_counts_from) {
  std::optional<api::Time> renewed = ParseOptionalTime(lease.renew_time);
  if (!renewed) return std::nullopt;
  return std::max(*renewed, silence_counts_from) + options.lease_grace;
}

std::chrono::nanoseconds NextTickDelay(api::Time now, const std::vector<api::Time>& deadlines,
                                       std::chrono::nanoseconds tick,
                                       std::chrono::nanoseconds coalesce) {
  std::chrono::nanoseconds delay = tick;
  for (const api::Time deadline : deadlines) {
    if (deadline < now) continue;
    delay = std::min(
        delay, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now) + coalesce);
  }
  return delay;
}

NodeVerdict AssessNode(const std::string& name, const kube::Node* node, const kube::Lease* lease,
                       api::Time now, const NodeHealthOptions& options,
                       api::Time leases_fresh_since) {
  NodeVerdict v = Judge(name, node, lease, now, options, leases_fresh_since);
  if (v.lost && node != nullptr) {
    for (const kube::Taint& taint : node->taints) {
      if (taint.effect == "NoExecute") v.no_execute_taints.push_back(taint);
    }
  }
  return v;
}

struct NodeHealthMonitor::State {
  State(kube::RestClient& client, ControllerMetrics* m)
      : metrics(m),
        nodes(client, kube::resources::Nodes(), "",
              [](const nlohmann::json& j) { return kube::DecodeNode(j); }),
        leases(client, kube::resources::Leases(), kNodeLeaseNamespace,
               [](const nlohmann::json& j) { return kube::DecodeLease(j); }) {}

  ControllerMetrics* const metrics;
  LostHandler handler;
  kube::Informer<kube::Node> nodes;
  kube::Informer<kube::Lease> leases;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by mu
  // Set after the first full pass: from then on events are judged one node at a time, and
  // detection delays are real (losses found by the first pass happened while nobody watched).
  bool watching = false;                              // guarded by mu
  std::unordered_map<std::string, std::string> lost;  // node -> reason; guarded by mu
  std::thread ticker;
  // The silence guard as the last tick set it; read by Assess from any thread.
  std::atomic<bool> silence_held{false};
  // When the last hold was released (time_since_epoch count; 0: never). Silence counts from no
  // earlier than that: the nodes still silent when most came back were silent for the same
  // reason, and get a fresh grace, as the node lifecycle controller resets every node's probe
  // time when a disruption ends. Without it, the stragglers of a control-plane stall were lost
  // the second the census fell (e2e, 2026-12-03: 14 of 25 silent, held 5 s, then the 4 agent
  // nodes still silent lost and their gangs restarted).
  std::atomic<api::Time::rep> silence_released_at{0};

  // Since when silence counts: the Lease view's continuity, or the last release, if later.
  api::Time SilenceCountsFrom() {
    return std::max(leases.reflector().FreshSince(),
                    api::Time(api::Time::duration(silence_released_at.load())));
  }

  // The verdict from the caches alone, before the silence guard.
  NodeVerdict Judge(const std::string& node, api::Time now, const NodeHealthOptions& o) {
    const auto n = nodes.store().Get(node);
    const auto l = leases.store().Get(std::string(kNodeLeaseNamespace) + "/" + node);
    return AssessNode(node, n.get(), l.get(), now, o, SilenceCountsFrom());
  }

  // Sets the guard from one tick's census; logs when it changes (only the tick thread writes).
  // Returns whether this tick's verdicts are held: while the guard holds, and on the tick that
  // releases it too (they were judged before the fresh grace; the next tick judges with it).
  bool SetSilence(int silent, int total, double fraction, api::Time now) {
    const bool held = HoldSilence(silent, total, fraction);
    const bool was = silence_held.exchange(held);
    if (metrics != nullptr) metrics->SetNodeSilence(silent, held);
    if (held == was) return held;
    const log::Fields fields = {{"silent", std::to_string(silent)},
                                {"nodes", std::to_string(total)},
                                {"fraction", std::to_string(fraction)}};
    if (held) {
      log::Warning("most nodes are silent at once: holding lease-expired and unreachable "
                   "verdicts (a control-plane problem is likelier than that many dead nodes)",
                   fields);
    } else {
      silence_released_at = now.time_since_epoch().count();
      log::Info("silence hold released: nodes still silent get a fresh grace from now", fields);
    }
    return true;
  }

  // Outside `mu`: the handler takes the controller's locks. Metrics count a node once per loss,
  // not again when only the reason changes.
  void Report(const std::string& node, const NodeVerdict& v, Change change, api::Time now,
              bool count_delay) {
    if (change == Change::kNone) return;
    log::Info(change == Change::kLost ? "node lost" : "lost node has a new reason",
              {{"node", node}, {"reason", v.reason}, {"message", v.message}});
    if (metrics != nullptr && change == Change::kLost) {
      metrics->ObserveNodeFailure(v.reason);
      if (count_delay && v.failed_at && *v.failed_at <= now) {
        metrics->ObserveDetectionDelay(v.reason,
                                       std::chrono::duration<double>(now - *v.failed_at).count());
      }
    }
    if (handler) handler(node, v);
  }
};

NodeHealthMonitor::NodeHealthMonitor(kube::RestClient& client, NodeHealthOptions options,
                                     ControllerMetrics* metrics,
                                     std::shared_ptr<kube::DecodePool<kube::Node>> node_pool)
    : options_(options), state_(std::make_unique<State>(client, metrics)) {
  state_->nodes.UseDecodePool(std::move(node_pool));
}

NodeHealthMonitor::~NodeHealthMonitor() { Stop(); }

void NodeHealthMonitor::SetLostHandler(LostHandler handler) {
  state_->handler = std::move(handler);
}

void NodeHealthMonitor::Start() {
  State& s = *state_;
  // Events re-judge the one node they concern as soon as both caches have synced (the initial
  // list's adds are left to the first full pass). An event must not wait for that pass: a node
  // deleted right after the sync, whose Lease the garbage collector removes with it, would be
  // in neither cache by then, and nothing else would ever report it.
  auto evaluate = [this](const std::string& node) {
    if (!HasSynced()) return;
    const api::Time now = std::chrono::system_clock::now();
    const NodeVerdict v = Assess(node, now);
    Change change = Change::kNone;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      change = Transition(state_->lost, node, v);
    }
    state_->Report(node, v, change, now, /*count_delay=*/true);
  };
  kube::EventHandlers<kube::Node> node_events;
  node_events.on_add = [evaluate](const auto& n) { evaluate(n->meta.name); };
  node_events.on_update = [evaluate](const auto&, const auto& n) { evaluate(n->meta.name); };
  node_events.on_delete = [evaluate](const auto& n, bool) { evaluate(n->meta.name); };
  s.nodes.AddEventHandler(std::move(node_events));
  kube::EventHandlers<kube::Lease> lease_events;
  lease_events.on_add = [evaluate](const auto& l) { evaluate(l->meta.name); };
  lease_events.on_update = [evaluate](const auto&, const auto& l) { evaluate(l->meta.name); };
  lease_events.on_delete = [evaluate](const auto& l, bool) { evaluate(l->meta.name); };
  s.leases.AddEventHandler(std::move(lease_events));
  s.nodes.Start();
  s.leases.Start();

  // The tick: a Lease that is no longer renewed produces no event, so every node is re-judged
  // each second (1000 nodes: about 1 ms of CPU per pass, measured), and when the first grace
  // ends sooner (NextTickDelay).
  s.ticker = std::thread([this] {
    State& st = *state_;
    std::unique_lock<std::mutex> lock(st.mu);
    while (!st.stopping) {
      lock.unlock();
      std::chrono::nanoseconds delay = kTick;
      if (HasSynced()) {
        const api::Time now = std::chrono::system_clock::now();
        const api::Time counts_from = st.SilenceCountsFrom();
        std::unordered_set<std::string> names;
        std::vector<api::Time> deadlines;
        for (const auto& node : st.nodes.store().List()) names.insert(node->meta.name);
        for (const auto& lease : st.leases.store().List()) {
          names.insert(lease->meta.name);
          if (auto deadline = LeaseDeadline(*lease, options_, counts_from)) {
            deadlines.push_back(*deadline);
          }
        }
        delay = NextTickDelay(now, deadlines, kTick, kCoalesce);
        std::vector<std::tuple<std::string, NodeVerdict, Change>> news;
        bool first_pass = false;
        {
          std::lock_guard<std::mutex> guard(st.mu);
          first_pass = !st.watching;
          // Gone from both caches: nothing can run there any more, and a node of that name
          // that comes back is a new node.
          for (auto it = st.lost.begin(); it != st.lost.end();) {
            it = names.count(it->first) != 0 ? std::next(it) : st.lost.erase(it);
          }
        }
        // The census first: whether silence counts this second depends on how many are silent.
        std::vector<std::pair<std::string, NodeVerdict>> verdicts;
        int silent = 0;
        for (const std::string& name : names) {
          verdicts.emplace_back(name, st.Judge(name, now, options_));
          if (IsSilenceVerdict(verdicts.back().second)) ++silent;
        }
        const bool hold = st.SetSilence(silent, static_cast<int>(names.size()),
                                        options_.silence_hold_fraction, now);
        for (auto& [name, raw] : verdicts) {
          NodeVerdict v = ApplySilenceHold(std::move(raw), hold);
          std::lock_guard<std::mutex> guard(st.mu);
          const Change change = Transition(st.lost, name, v);
          if (change != Change::kNone) news.emplace_back(name, std::move(v), change);
        }
        {
          std::lock_guard<std::mutex> guard(st.mu);
          st.watching = true;
        }
        for (const auto& [name, v, change] : news) st.Report(name, v, change, now, !first_pass);
      }
      lock.lock();
      st.cv.wait_for(lock, delay, [&st] { return st.stopping; });
    }
  });
}

void NodeHealthMonitor::RequestStop() {
  state_->nodes.RequestStop();
  state_->leases.RequestStop();
}

void NodeHealthMonitor::Stop() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
  }
  s.cv.notify_all();
  if (s.ticker.joinable()) s.ticker.join();
  kube::StopAll({&s.nodes, &s.leases});
}

bool NodeHealthMonitor::HasSynced() const {
  return state_->nodes.HasSynced() && state_->leases.HasSynced();
}

std::string NodeHealthMonitor::UnsyncedCaches() const {
  return kube::Unsynced({&state_->nodes, &state_->leases});
}

bool NodeHealthMonitor::WaitForSync(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!state_->nodes.WaitForSync(timeout)) return false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() >= 0 && state_->leases.WaitForSync(left);
}

NodeVerdict NodeHealthMonitor::Assess(const std::string& node, api::Time now) const {
  if (!HasSynced()) return NodeVerdict{};
  return ApplySilenceHold(state_->Judge(node, now, options_), state_->silence_held.load());
}

bool NodeHealthMonitor::SilenceHeld() const { return state_->silence_held.load(); }

std::optional<NodeSnapshot> NodeHealthMonitor::Snapshot(const std::string& node) const {
  if (!HasSynced()) return std::nullopt;
  NodeSnapshot out;
  if (const auto n = state_->nodes.store().Get(node)) out.node = *n;
  if (const auto l = state_->leases.store().Get(std::string(kNodeLeaseNamespace) + "/" + node)) {
    out.lease = *l;
  }
  out.leases_fresh_since = state_->leases.reflector().FreshSince();
  return out;
}

}  // namespace lockstep::controller
