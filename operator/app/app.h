#pragma once
// OperatorApp: wires lockstep-operator together: config and transport, one RestClient, the
// metrics registry (client, work-queue, leader-election and controller metrics in one), the
// TrainingJob controller, the /metrics and /healthz /readyz servers, and leader election.
//
// With --leader-elect the caches start at once (a standby is warm) but workers start only on
// winning the Lease; losing it ends the process at once (exit status 1, after flushing logs), as
// controller-runtime does: a new leader may already be acting, and a restart is the simplest
// way to drop every in-flight decision. Every write of the controller, the scheduler and the
// event recorder is fenced by the lease (LeaderElector::MayWrite): a leader that wakes from a
// pause after its lease expired sends nothing before it exits.
//
// A requested stop ends within kStopBound whatever the apiserver does (a leader that cannot stop
// cannot release its Lease early and holds up every rollout): API requests still running after
// kStopGrace are cancelled (kube::RestClient::Cancel), and past kStopBound the process exits
// with status 1.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "operator/app/options.h"

namespace lockstep::app {

class OperatorApp {
 public:
  static constexpr std::chrono::seconds kStopGrace{2};
  static constexpr std::chrono::seconds kStopBound{5};

  explicit OperatorApp(OperatorOptions options);
  ~OperatorApp();

  // Runs until Shutdown(); returns the process exit status.
  int Run();
  // Thread-safe; async-signal-unsafe (call from a signal-waiting thread, not a handler).
  void Shutdown();

 private:
  struct Parts;
  // Watches a stop from its start: cancels the clients after kStopGrace, exits after kStopBound.
  class StopGuard {
   public:
    explicit StopGuard(Parts& parts);
    ~StopGuard();
    void Done();

   private:
    // Real time: the bound is a condition variable's wait.
    const Clock::Steady start_ = RealClock::Get().Now();
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;  // guarded by mu_
    std::thread thread_;  // last: starts after the members above exist
  };
  Status Start();
  // /metrics over HTTPS for allowed bearer tokens (--metrics-secure).
  static Status ServeSecureMetrics(const OperatorOptions& options, Parts& parts);
  // The leader elector (not yet running) whose lease fences every write of the clients.
  Status MakeElector(const std::string& identity);
  void WaitForShutdown();

  const OperatorOptions options_;
  std::unique_ptr<Parts> parts_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shutdown_ = false;  // guarded by mu_
};

}  // namespace lockstep::app
