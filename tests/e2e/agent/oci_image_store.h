#pragma once
// The agent's image store: OCI image layouts (hack/build-images.sh writes build/images/<image>/)
// imported under the references their index.json tags, each manifest unpacked once (umoci raw
// unpack, which verifies the layers' digests) no matter how many names or containers use it.
// Pods whose image the store has run from it with runc (oci_runtime.h); every other image keeps
// the host-mapped path (image_map.h). Nothing is ever pulled.
//
// On disk, under the root (<state-dir>/images):
//   refs/<reference, '/' and ':' escaped>   the manifest digest it names
//   sha256-<hex>/rootfs/                     the unpacked root filesystem, never written to
//                                            (containers run on copies of it)
//   sha256-<hex>/config.json                 the image configuration blob
// An unpack happens in a `.partial` directory renamed into place and imports hold <root>/.lock,
// so the agent and a concurrent `lockstep-test-node-agent --import-image` never see half an
// image. Find reads only complete entries and is safe from any thread.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

// What a runtime needs of an OCI image configuration (its `config` object).
struct ImageConfig {
  std::string user;  // "uid", "uid:gid", "name" or "name:group"; "" = root
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // KEY=VALUE
  std::string working_dir;
};

// Reads an image configuration blob. INVALID_ARGUMENT when a field has the wrong type.
StatusOr<ImageConfig> ParseImageConfig(const nlohmann::json& blob);

// The canonical form of an image reference, as a container runtime compares them: the default
// registry ("docker.io/", "index.docker.io/") and its "library/" namespace dropped, ":latest"
// added when there is neither a tag nor a digest.
std::string NormalizeImageReference(const std::string& image);

struct StoredImage {
  std::string reference;  // normalized
  std::string digest;     // sha256:<hex> of the manifest
  std::string rootfs;
  ImageConfig config;
};

class ImageStore {
 public:
  explicit ImageStore(std::string root) : root_(std::move(root)) {}

  // Imports every tagged manifest of the OCI layout at `layout_dir`, unpacking those not stored
  // yet. Returns "<reference> <digest>" per tag. The manifest and configuration blobs are
  // checked against their digests.
  StatusOr<std::vector<std::string>> Import(const std::string& layout_dir);

  // The stored image `image` (a pod's `image` field) names, by reference or by
  // "<name>@sha256:<hex>"; nullopt when the store does not have it.
  std::optional<StoredImage> Find(const std::string& image) const;

  const std::string& root() const { return root_; }

 private:
  Status Unpack(const std::string& layout_dir, const std::string& tag, const std::string& digest,
                const std::string& config_blob);
  std::optional<StoredImage> Load(const std::string& reference, const std::string& digest) const;

  const std::string root_;
};

}  // namespace lockstep::e2e
