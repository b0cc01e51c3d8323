#include "operator/controller/node_health.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/log.h"
#include "operator/controller/controller_metrics.h"
#include "operator/controller/node_health_pass.h"
#include "operator/controller/silence_guard.h"
#include "operator/kube/informer.h"

namespace lockstep::controller {
namespace {

constexpr char kNodeLeaseNamespace[] = "kube-node-lease";
constexpr auto kTick = std::chrono::seconds(1);
// Graces that end this close together are judged in one pass (NextTickDelay). Above zero, since
// AssessNode's test is strictly past the grace.
constexpr auto kCoalesce = std::chrono::milliseconds(250);

}  // namespace

struct NodeHealthMonitor::State {
  State(kube::RestClient& client, ControllerMetrics* m, const Clock& c)
      : metrics(m),
        clock(c),
        nodes(client, kube::resources::Nodes(), "",
              [](const nlohmann::json& j) { return kube::DecodeNode(j); }),
        leases(client, kube::resources::Leases(), kNodeLeaseNamespace,
               [](const nlohmann::json& j) { return kube::DecodeLease(j); }) {}

  ControllerMetrics* const metrics;
  const Clock& clock;
  LostHandler handler;
  kube::Informer<kube::Node> nodes;
  kube::Informer<kube::Lease> leases;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by mu
  // Set after the first full pass: from then on events are judged one node at a time, and
  // detection delays are real (losses found by the first pass happened while nobody watched).
  bool watching = false;  // guarded by mu
  LostNodes lost;         // guarded by mu
  std::thread ticker;
  // The silence guard as the last tick set it; read by Assess from any thread.
  std::atomic<bool> silence_held{false};
  // When the last hold was released (time_since_epoch count; 0: never), for SilenceCountsFrom.
  // Without it, the stragglers of a control-plane stall were lost the second the census fell
  // (e2e, 2026-12-03: 14 of 25 silent, held 5 s, then the 4 agent nodes still silent lost and
  // their gangs restarted).
  std::atomic<api::Time::rep> silence_released_at{0};

  api::Time SilenceCountsFrom() {
    return controller::SilenceCountsFrom(
        leases.reflector().FreshSince(),
        api::Time(api::Time::duration(silence_released_at.load())));
  }

  // The verdict from the caches alone, before the silence guard.
  NodeVerdict Judge(const std::string& node, api::Time now, const NodeHealthOptions& o) {
    const auto n = nodes.store().Get(node);
    const auto l = leases.store().Get(std::string(kNodeLeaseNamespace) + "/" + node);
    return AssessNode(node, n.get(), l.get(), now, o, SilenceCountsFrom());
  }

  // Every node either cache names, with what each holds for it.
  KnownNodes Known() {
    KnownNodes known;
    for (const auto& node : nodes.store().List()) known[node->meta.name].node = node;
    for (const auto& lease : leases.store().List()) known[lease->meta.name].lease = lease;
    return known;
  }

  // Sets the guard from one tick's census; logs when it changes (only the tick thread writes).
  // Returns whether this tick's verdicts are held (StepSilenceGuard).
  bool SetSilence(int silent, int total, double fraction, api::Time now) {
    const SilenceGuardStep step = StepSilenceGuard(silence_held.load(), silent, total, fraction);
    silence_held = step.held;
    if (metrics != nullptr) metrics->SetNodeSilence(silent, step.held);
    if (!step.changed) return step.hold_verdicts;
    const log::Fields fields = {{"silent", std::to_string(silent)},
                                {"nodes", std::to_string(total)},
                                {"fraction", std::to_string(fraction)}};
    if (step.held) {
      log::Warning("most nodes are silent at once: holding lease-expired and unreachable "
                   "verdicts (a control-plane problem is likelier than that many dead nodes)",
                   fields);
    } else {
      silence_released_at = now.time_since_epoch().count();
      log::Info("silence hold released: nodes still silent get a fresh grace from now", fields);
    }
    return step.hold_verdicts;
  }

  // Outside `mu`: the handler takes the controller's locks. Metrics count a node once per loss,
  // not again when only the reason changes.
  void Report(const std::string& node, const NodeVerdict& v, LostChange change, api::Time now,
              bool count_delay) {
    if (change == LostChange::kNone) return;
    log::Info(change == LostChange::kLost ? "node lost" : "lost node has a new reason",
              {{"node", node}, {"reason", v.reason}, {"message", v.message}});
    if (metrics != nullptr && change == LostChange::kLost) {
      metrics->ObserveNodeFailure(v.reason);
      if (count_delay && v.failed_at && *v.failed_at <= now) {
        metrics->ObserveDetectionDelay(v.reason,
                                       std::chrono::duration<double>(now - *v.failed_at).count());
      }
    }
    if (handler) handler(node, v);
  }

  // One pass over every node at `now` (node_health_pass.h's steps); returns how long the tick
  // sleeps before the next.
  std::chrono::nanoseconds Pass(api::Time now, const NodeHealthOptions& o) {
    const KnownNodes known = Known();
    NodeCensus census = JudgeNodes(known, now, o, SilenceCountsFrom());
    bool first_pass = false;
    {
      std::lock_guard<std::mutex> guard(mu);
      first_pass = !watching;
      ForgetGoneNodes(lost, known);
    }
    // Whether silence counts this second depends on how many are silent.
    const bool hold =
        SetSilence(census.silent, static_cast<int>(known.size()), o.silence_hold_fraction, now);
    std::vector<LostNews> news;
    {
      std::lock_guard<std::mutex> guard(mu);
      news = RecordVerdicts(lost, std::move(census.verdicts), hold);
      watching = true;
    }
    for (const LostNews& n : news) Report(n.node, n.verdict, n.change, now, !first_pass);
    return NextTickDelay(now, census.lease_deadlines, kTick, kCoalesce);
  }
};

NodeHealthMonitor::NodeHealthMonitor(kube::RestClient& client, NodeHealthOptions options,
                                     ControllerMetrics* metrics,
                                     std::shared_ptr<kube::DecodePool<kube::Node>> node_pool,
                                     const Clock& clock)
    : options_(options), state_(std::make_unique<State>(client, metrics, clock)) {
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
    const api::Time now = state_->clock.WallNow();
    const NodeVerdict v = Assess(node, now);
    LostChange change = LostChange::kNone;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      change = RecordVerdict(state_->lost, node, v);
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
      const std::chrono::nanoseconds delay =
          HasSynced() ? st.Pass(st.clock.WallNow(), options_) : kTick;
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
  return kube::WaitForSyncAll({&state_->nodes, &state_->leases}, timeout, state_->clock);
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
