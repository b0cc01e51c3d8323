#pragma once
// NCCL loaded at run time with dlopen, so the launcher runs in images without it. Only the
// bootstrap calls are used: ncclGetUniqueId (works without a GPU: it opens the root's listening
// socket and starts NCCL's bootstrap root thread in this process, which is why node 0's launcher,
// which lives as long as the attempt, is the one to call it) and ncclGetVersion.

#include <memory>
#include <string>

#include "common/status.h"

namespace lockstep::launcher::nccl {

inline constexpr size_t kUniqueIdBytes = 128;

class NcclLibrary {
 public:
  // `path` is a file name for the dynamic loader's search ("libnccl.so.2") or a path.
  static StatusOr<std::unique_ptr<NcclLibrary>> Load(const std::string& path);
  ~NcclLibrary();
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  // e.g. 22807 for 2.28.7.
  int version() const { return version_; }
  std::string VersionString() const;
  // A fresh 128-byte unique id.
  StatusOr<std::string> GetUniqueId() const;

 private:
  using GetUniqueIdFn = int (*)(void*);
  NcclLibrary(void* handle, GetUniqueIdFn get_unique_id, int version)
      : handle_(handle), get_unique_id_(get_unique_id), version_(version) {}
  void* handle_;
  GetUniqueIdFn get_unique_id_;
  int version_;
};

// Lower-case hex, 2 characters per byte.
std::string ToHex(const std::string& bytes);
StatusOr<std::string> FromHex(const std::string& hex);

}  // namespace lockstep::launcher::nccl
