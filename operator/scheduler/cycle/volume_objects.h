#pragma once
// The scheduler's caches of PersistentVolumeClaims, PersistentVolumes and StorageClasses
// (issue 41 item 1): compact decoded forms of what volumes.h reads, the catalog one cycle
// builds from them, and a gang's claims resolved against it. Decoders never throw (they run on
// informer threads); a quantity that does not parse makes the object unusable rather than
// smaller or larger than written (a claim asking for more than any PV has, a PV of size 0).

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/gangs.h"
#include "operator/scheduler/volumes.h"

namespace lockstep::scheduler {

struct ClaimObject {
  kube::ObjectMeta meta;
  ClaimInfo info;
};
struct VolumeObject {
  kube::ObjectMeta meta;
  VolumeInfo info;
};
struct StorageClassObject {
  kube::ObjectMeta meta;
  StorageClassInfo info;
};

StatusOr<ClaimObject> DecodeClaim(const nlohmann::json& object);
StatusOr<VolumeObject> DecodeVolume(const nlohmann::json& object);
StatusOr<StorageClassObject> DecodeStorageClass(const nlohmann::json& object);

inline kube::ResourceRef PersistentVolumeClaims() {
  return {"", "v1", "persistentvolumeclaims", true};
}
inline kube::ResourceRef PersistentVolumes() { return {"", "v1", "persistentvolumes", false}; }
inline kube::ResourceRef StorageClasses() {
  return {"storage.k8s.io", "v1", "storageclasses", false};
}

VolumeCatalog BuildCatalog(const std::vector<std::shared_ptr<const ClaimObject>>& claims,
                           const std::vector<std::shared_ptr<const VolumeObject>>& volumes,
                           const std::vector<std::shared_ptr<const StorageClassObject>>& classes);

// Whether the pod names a claim (a persistentVolumeClaim or generic ephemeral volume).
bool HasVolumeClaims(const kube::Pod& pod);

// Fills every pod's PodRequest::volumes from its claims (ResolveClaim). Pods without claims are
// left alone.
void ResolveGangVolumes(CollectedGang& gang, const VolumeCatalog& catalog);

}  // namespace lockstep::scheduler
