#include "operator/scheduler/cycle/binder.h"

#include <atomic>
#include <mutex>

#include "common/log.h"
#include "operator/kube/api_error.h"

namespace lockstep::scheduler {

struct Binder::Pending {
  std::shared_ptr<const GangBind> gang;
  Done done;
  std::atomic<size_t> remaining{0};
  std::mutex mu;
  std::vector<Status> results;  // per target; guarded by mu until remaining reaches 0
  Status volumes;               // the first failed volume write: then nothing was bound
};

Binder::Binder(kube::RestClient& client, ThreadPool& pool, AssumedPods& assumed,
               const Clock& clock)
    : client_(client), pool_(pool), assumed_(assumed), clock_(clock) {}

nlohmann::json Binder::BindingBody(const kube::Pod& pod, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata",
           {{"name", pod.meta.name}, {"namespace", pod.meta.namespace_}, {"uid", pod.meta.uid}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

void Binder::Bind(std::shared_ptr<const GangBind> gang, Done done) {
  auto pending = std::make_shared<Pending>();
  pending->gang = std::move(gang);
  pending->done = std::move(done);
  const size_t n = pending->gang->targets.size();
  pending->results.assign(n, Status::Ok());
  pending->remaining = n;
  if (n == 0) {
    pool_.Submit([this, pending] { Finish(*pending); });
    return;
  }
  if (pending->gang->volume_writes.empty()) {
    BindAll(pending);
    return;
  }
  pool_.Submit([this, pending] {
    for (const VolumeWrite& write : pending->gang->volume_writes) {
      Status written = ApplyVolumeWrite(client_, write);
      if (!written.ok()) {
        pending->volumes = Status(written.code(), "cannot write volume binding (" +
                                                      DescribeVolumeWrite(write) +
                                                      "): " + written.message());
        Finish(*pending);
        return;
      }
    }
    BindAll(pending);
  });
}

void Binder::BindAll(const std::shared_ptr<Pending>& pending) {
  for (size_t i = 0; i < pending->results.size(); ++i) {
    pool_.Submit([this, pending, i] { BindOne(pending, i); });
  }
}

void Binder::BindOne(const std::shared_ptr<Pending>& pending, size_t i) {
  const auto& [pod, node] = pending->gang->targets[i];
  Status result = client_
                      .CreateSubresource(kube::resources::Pods(), pod->meta.namespace_,
                                         pod->meta.name, "binding", BindingBody(*pod, node))
                      .status();
  if (result.ok()) assumed_.Confirm(pod->meta.Key(), clock_.Now());
  {
    std::lock_guard<std::mutex> lock(pending->mu);
    pending->results[i] = std::move(result);
  }
  if (pending->remaining.fetch_sub(1) == 1) Finish(*pending);
}

void Binder::Finish(const Pending& pending) {
  BindOutcome outcome;
  if (!pending.volumes.ok()) {  // no pod was bound: forget the assumptions, delete nothing
    for (const auto& target : pending.gang->targets) assumed_.Forget(target.first->meta.Key());
    outcome.error = pending.volumes;
    pending.done(*pending.gang, outcome);
    return;
  }
  for (const Status& s : pending.results) {
    if (!s.ok()) {
      outcome.error = s;
      break;
    }
  }
  if (!outcome.error.ok()) outcome.deleted = Undo(pending);
  pending.done(*pending.gang, outcome);
}

int Binder::Undo(const Pending& pending) {
  int deleted = 0;
  for (size_t i = 0; i < pending.results.size(); ++i) {
    const Status& s = pending.results[i];
    const PodPtr& pod = pending.gang->targets[i].first;
    assumed_.Forget(pod->meta.Key());
    if (IsNotFound(s) || kube::IsConflict(s)) continue;  // certainly not bound by us
    if (!s.ok() && kube::IsInvalid(s)) continue;          // rejected before any write
    kube::DeleteOptions options;
    options.precondition_uid = pod->meta.uid;
    Status del = client_.Delete(kube::resources::Pods(), pod->meta.namespace_, pod->meta.name,
                                options).status();
    if (del.ok() || IsNotFound(del)) {
      ++deleted;
    } else {
      // The pod stays bound; the next cycle sees a gang with bound members and the failure
      // is in the log. Retrying here would hold a bind worker.
      log::Error("cannot undo the bind of a partial gang",
                 {{"pod", pod->meta.Key()}, {"error", del.ToString()}});
    }
  }
  return deleted;
}

}  // namespace lockstep::scheduler
