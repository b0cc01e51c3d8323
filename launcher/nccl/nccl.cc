#include "launcher/nccl/nccl.h"

#include <dlfcn.h>

namespace lockstep::launcher::nccl {

StatusOr<std::unique_ptr<NcclLibrary>> NcclLibrary::Load(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    return NotFoundError("dlopen " + path + ": " + (err ? err : "unknown error"));
  }
  void* get_id = ::dlsym(handle, "ncclGetUniqueId");
  void* get_version = ::dlsym(handle, "ncclGetVersion");
  if (get_id == nullptr || get_version == nullptr) {
    ::dlclose(handle);
    return NotFoundError(path + " lacks ncclGetUniqueId or ncclGetVersion");
  }
  int version = 0;
  auto version_fn = reinterpret_cast<int (*)(int*)>(get_version);
  if (version_fn(&version) != 0) {
    ::dlclose(handle);
    return InternalError("ncclGetVersion failed");
  }
  return std::unique_ptr<NcclLibrary>(
      new NcclLibrary(handle, reinterpret_cast<GetUniqueIdFn>(get_id), version));
}

NcclLibrary::~NcclLibrary() {
  // Deliberately not dlclose'd: NCCL's bootstrap root thread may still run code from it.
}

std::string NcclLibrary::VersionString() const {
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100.
  const int major = version_ >= 10000 ? version_ / 10000 : version_ / 1000;
  const int minor = version_ >= 10000 ? (version_ % 10000) / 100 : (version_ % 1000) / 100;
  const int patch = version_ % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

StatusOr<std::string> NcclLibrary::GetUniqueId() const {
  std::string id(kUniqueIdBytes, '\0');
  const int rc = get_unique_id_(id.data());
  if (rc != 0) return InternalError("ncclGetUniqueId failed with code " + std::to_string(rc));
  return id;
}

std::string ToHex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

StatusOr<std::string> FromHex(const std::string& hex) {
  if (hex.size() % 2 != 0) return InvalidArgumentError("hex string of odd length");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgumentError("not a hex digit");
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

}  // namespace lockstep::launcher::nccl
