// Fuzz target for the scheduler's volume decoders (operator/scheduler/cycle/volume_objects.h):
// claims are written by users (a generic ephemeral volume's template by whoever writes the job),
// PVs and StorageClasses by administrators and provisioners. Every decoder sees every input;
// acceptable outcomes are values or error statuses; what decodes is resolved as a pod's claim
// against a catalog of it (volumes.h) and fitted to a node, which must not fail either.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "operator/scheduler/cycle/volume_objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::scheduler;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  VolumeCatalog catalog;
  std::string claim_name = "c";
  std::string ns = "ns";
  if (auto claim = DecodeClaim(object); claim.ok()) {
    claim_name = claim->info.name;
    ns = claim->info.namespace_;
    catalog.claims[claim->meta.Key()] = claim->info;
  }
  if (auto pv = DecodeVolume(object); pv.ok()) catalog.volumes[pv->info.name] = pv->info;
  if (auto sc = DecodeStorageClass(object); sc.ok()) catalog.classes[sc->info.name] = sc->info;
  for (bool ephemeral : {false, true}) {
    const ClaimNeed need = ResolveClaim(ns, {claim_name, ephemeral}, catalog);
    LS_CHECK(need.claim == claim_name);
    LS_CHECK((need.state == ClaimState::kWaiting) == !need.waiting.empty());
    NodeInfo node;
    node.name = "n";
    (void)FitClaim(need, node, nullptr, nullptr);
    (void)DescribeClaimMiss(need, 1);
  }
  return 0;
}
