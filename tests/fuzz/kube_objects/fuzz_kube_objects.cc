// Fuzz target for the kube client's object decoders (operator/kube/objects.h): Pods, Nodes,
// Leases and the metadata-only and generic objects the informers cache. Pods and their status
// are written by users and kubelets (a pod can set its own termination message and conditions),
// Nodes and Leases by node agents. Every decoder sees every input; acceptable outcomes are
// values or error statuses, and a decoded object's key is its namespace and name.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "operator/kube/objects.h"

namespace lockstep::kube {
namespace {

void CheckMeta(const ObjectMeta& meta) {
  const std::string key = meta.Key();
  LS_CHECK(key.size() >= meta.name.size());
  (void)meta.ControllerRef();
}

}  // namespace
}  // namespace lockstep::kube

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::kube;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  if (auto pod = DecodePod(object); pod.ok()) {
    CheckMeta(pod->meta);
    (void)pod->FindCondition("Ready");
    (void)pod->IsTerminal();
  }
  if (auto node = DecodeNode(object); node.ok()) {
    CheckMeta(node->meta);
    (void)node->IsReady();
  }
  if (auto lease = DecodeLease(object); lease.ok()) CheckMeta(lease->meta);
  if (auto meta = DecodeMetaObject(object); meta.ok()) CheckMeta(meta->meta);
  if (auto generic = DecodeGenericObject(object); generic.ok()) CheckMeta(generic->meta);
  return 0;
}
