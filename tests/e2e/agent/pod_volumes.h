#pragma once
// A pod's volumes on the host, as the kubelet would lay them out: emptyDir (a directory under
// the pod's state dir), secret / configMap / downwardAPI / projected (files written from the
// API objects, projected service-account tokens from the TokenRequest API) and hostPath; and the
// pod's one filesystem view, the union of its containers' volumeMounts.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/pod_env.h"
#include "tests/e2e/agent/sandbox.h"
#include "tests/e2e/agent/state_dir.h"

namespace lockstep::e2e {

// Volume name -> host directory (or hostPath).
using VolumeDirs = std::map<std::string, std::string>;

// A Secret's or ConfigMap's data, decoded (key -> bytes).
StatusOr<std::map<std::string, std::string>> FetchConfigData(kube::RestClient& client,
                                                             const std::string& ns,
                                                             const std::string& kind,
                                                             const std::string& name);

// Writes `data` to `path` with permission bits `mode`.
Status WriteHostFile(const std::string& path, const std::string& data, int mode);

// The bind mounts of one container's volumeMounts, in its order: the volume's host directory
// (plus subPath, created when missing) at mountPath, read-only when asked.
StatusOr<std::vector<BindMount>> ContainerMounts(const nlohmann::json& container,
                                                 const VolumeDirs& dirs);

// What the kubelet does for a hostPath's `type`: create it (DirectoryOrCreate, FileOrCreate) or
// require it to exist as that kind of file (Directory, File). The empty type checks nothing.
Status CheckHostPath(const std::string& path, const std::string& type);

class PodVolumes {
 public:
  // `dir` is the pod's state directory; volumes live in dir/volumes/<name>.
  PodVolumes(kube::RestClient& client, StateDir& state, nlohmann::json pod, std::string dir,
             PodRuntimeFields rt);

  // Creates every volume and its content.
  StatusOr<VolumeDirs> Prepare();
  // The bind mounts for the pod's mount namespace, parents first, of the containers for which
  // `wanted` holds (those run as host processes; a container from an image mounts its own):
  // the pod's own /tmp (dir/tmp, mode 1777; unless a volume is mounted at /tmp), then the
  // volumes, and each of `host_paths` under /tmp at its own path (the image directories and
  // files commands name, as ImageMapper::HostPaths lists them; one inside another is covered by
  // it). Missing mount targets are created: under /tmp in the pod's own /tmp, elsewhere on the
  // host through the state dir (which removes them).
  StatusOr<std::vector<BindMount>> Mounts(const VolumeDirs& dirs,
                                          const std::function<bool(const nlohmann::json&)>& wanted,
                                          const std::vector<std::string>& host_paths = {});

 private:
  Status PrepareVolume(const nlohmann::json& volume, const std::string& dir);
  Status WriteObjectSource(const std::string& dir, const std::string& kind,
                           const nlohmann::json& src, int default_mode);
  Status WriteKeyFiles(const std::string& dir, const nlohmann::json& src,
                       const std::map<std::string, std::string>& data, int default_mode);
  Status WriteVolumeFile(const std::string& dir, const std::string& rel, const std::string& data,
                         int mode);
  Status WriteDownwardApi(const std::string& dir, const nlohmann::json& src, int default_mode);
  Status WriteServiceAccountToken(const std::string& dir, const nlohmann::json& src,
                                  int default_mode);

  kube::RestClient& client_;
  StateDir& state_;
  const nlohmann::json pod_;
  const std::string ns_;
  const std::string name_;
  const std::string uid_;
  const std::string dir_;
  const PodRuntimeFields rt_;
};

}  // namespace lockstep::e2e
