#pragma once
// Placed at create, the controller's side (docs/scheduler-cycle.md, "Created placed"). When the
// gang scheduler runs in the same process, a pass that creates a job's whole gang may ask it for
// the gang's placement first and create every pod with spec.nodeName set: one write per pod
// instead of a create and a bind. All or nothing: when any create fails, or the scheduler finds a
// stored pod changed at admission, every pod created is deleted and the next pass decides again.
//
// GangPlacer: the narrow interface the controller sees of the scheduler (operator/app wires
// GangScheduler to it). Implementations are thread-safe; every method may be called from any
// reconcile worker.
//
// ChooseCreatePath: the controller's half of the decision, pure and table-tested: only a whole
// gang of the job's current attempt, none of whose pods exist, with nothing that forbids a
// nodeName at create, is offered; everything else (a refill after a lost pod, an elastic resize,
// a replacement spare, pods with scheduling gates) is created unplaced and bound as before. The
// scheduler then applies its own checks (create_placement.h) and may still say no.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

class GangPlacer {
 public:
  struct Grant {
    std::string gang_key;                        // names the gang in FinishCreate
    std::map<std::string, std::string> node_of;  // pod name -> node
  };
  virtual ~GangPlacer() = default;
  // The nodes for `pods` (the whole gang, about to be created), assumed until FinishCreate; an
  // error means: create them unplaced.
  virtual StatusOr<Grant> PlaceForCreate(const std::vector<nlohmann::json>& pods) = 0;
  // The creates are over (`created`: the apiserver's answers; `whole`: every pod created). An
  // error: the gang must be undone (its created pods deleted).
  virtual Status FinishCreate(const std::string& gang_key,
                              const std::vector<nlohmann::json>& created, bool whole) = 0;
};

enum class CreatePath { kUnplaced, kPlaced };

struct CreatePathChoice {
  CreatePath path = CreatePath::kUnplaced;
  std::string why;  // kUnplaced: the reason, for logs
};

// `observed`: the job's pods as the caches hold them; `creates`: the pass's pod creates.
CreatePathChoice ChooseCreatePath(const api::TrainingJob& job,
                                  const std::vector<kube::Pod>& observed,
                                  const std::vector<nlohmann::json>& creates);

}  // namespace lockstep::controller
