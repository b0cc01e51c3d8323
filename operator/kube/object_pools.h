#pragma once
// The decode pools (decode_pool.h) of the kinds that the operator's controller and its gang
// scheduler both cache: pods (the controller's per-namespace, labelled view and the scheduler's
// non-terminal view overlap in the jobs' pods) and nodes (the node monitor's and the
// scheduler's). Members left null: each informer decodes privately.

#include <memory>

#include "operator/kube/decode_pool.h"
#include "operator/kube/objects.h"

namespace lockstep::kube {

struct ObjectPools {
  std::shared_ptr<DecodePool<Pod>> pods;
  std::shared_ptr<DecodePool<Node>> nodes;
};

inline ObjectPools NewObjectPools() {
  return {std::make_shared<DecodePool<Pod>>(&DecodePod),
          std::make_shared<DecodePool<Node>>(&DecodeNode)};
}

}  // namespace lockstep::kube
