#include "tests/e2e/agent/oci_image_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/e2e/agent/host_command.h"

namespace lockstep::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr char kRefAnnotation[] = "org.opencontainers.image.ref.name";
constexpr size_t kMaxMetadataBlob = 1 << 20;  // manifests and configs are a few KiB

StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::string data(kMaxMetadataBlob + 1, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  if (data.size() > kMaxMetadataBlob) return InvalidArgumentError(path + " is too large");
  return data;
}

Status WriteFileAtomically(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << data;
    if (!out.flush()) return InternalError("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return InternalError("rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

std::string Sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", md[i]);
    hex += byte;
  }
  return hex;
}

// "sha256:<64 hex>" -> "<64 hex>", or "" for anything else (other algorithms are not used here).
std::string DigestHex(const std::string& digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.size() != kPrefix.size() + 64 || digest.rfind(kPrefix, 0) != 0) return "";
  const std::string hex = digest.substr(kPrefix.size());
  if (hex.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return hex;
}

// A blob of the layout, checked against its digest.
StatusOr<std::string> ReadBlob(const std::string& layout, const std::string& digest) {
  const std::string hex = DigestHex(digest);
  if (hex.empty()) return InvalidArgumentError("unsupported digest " + digest);
  LS_ASSIGN_OR_RETURN(std::string data, ReadSmallFile(layout + "/blobs/sha256/" + hex));
  if (Sha256Hex(data) != hex) return DataLossError("blob " + digest + " does not match its digest");
  return data;
}

StatusOr<json> ParseJson(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgumentError(what + " is not a JSON object");
  return j;
}

// '/' and ':' make no file name: "lockstep/operator:0.1.0" -> "lockstep%2Foperator%3A0.1.0".
std::string RefFileName(const std::string& reference) {
  std::string out;
  for (char c : reference) {
    if (c == '/') {
      out += "%2F";
    } else if (c == ':') {
      out += "%3A";
    } else if (c == '%') {
      out += "%25";
    } else {
      out += c;
    }
  }
  return out;
}

StatusOr<std::vector<std::string>> StringArray(const json& config, const char* key) {
  std::vector<std::string> out;
  if (!config.contains(key) || config[key].is_null()) return out;
  if (!config[key].is_array()) return InvalidArgumentError(std::string(key) + " is not an array");
  for (const json& s : config[key]) {
    if (!s.is_string()) return InvalidArgumentError(std::string(key) + " holds a non-string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// An exclusive lock on <root>/.lock for the lifetime of the object.
class StoreLock {
 public:
  explicit StoreLock(const std::string& root)
      : fd_(open((root + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~StoreLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  bool ok() const { return fd_ >= 0; }

 private:
  const int fd_;
};

}  // namespace

StatusOr<ImageConfig> ParseImageConfig(const json& blob) {
  ImageConfig out;
  if (!blob.contains("config") || blob["config"].is_null()) return out;
  const json& config = blob["config"];
  if (!config.is_object()) return InvalidArgumentError("image config: config is not an object");
  auto str = [&](const char* key, std::string* field) -> Status {
    if (!config.contains(key) || config[key].is_null()) return Status::Ok();
    if (!config[key].is_string()) return InvalidArgumentError(std::string(key) + " not a string");
    *field = config[key].get<std::string>();
    return Status::Ok();
  };
  LS_RETURN_IF_ERROR(str("User", &out.user));
  LS_RETURN_IF_ERROR(str("WorkingDir", &out.working_dir));
  LS_ASSIGN_OR_RETURN(out.entrypoint, StringArray(config, "Entrypoint"));
  LS_ASSIGN_OR_RETURN(out.cmd, StringArray(config, "Cmd"));
  LS_ASSIGN_OR_RETURN(out.env, StringArray(config, "Env"));
  return out;
}

std::string NormalizeImageReference(const std::string& image) {
  std::string ref = image;
  for (std::string_view prefix : {"docker.io/", "index.docker.io/", "library/"}) {
    if (ref.rfind(prefix, 0) == 0) ref = ref.substr(prefix.size());
  }
  const size_t slash = ref.rfind('/');
  const size_t colon = ref.rfind(':');
  const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  if (!tagged && ref.find('@') == std::string::npos) ref += ":latest";
  return ref;
}

Status ImageStore::Unpack(const std::string& layout_dir, const std::string& tag,
                          const std::string& digest, const std::string& config_blob) {
  const std::string dir = root_ + "/sha256-" + DigestHex(digest);
  std::error_code ec;
  if (fs::exists(dir + "/config.json", ec)) return Status::Ok();  // once per digest
  const std::string partial = dir + ".partial";
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  if (ec) return InternalError("create " + partial + ": " + ec.message());
  // umoci checks every layer against its digest and applies whiteouts as a runtime would.
  Status unpacked = RunHostCommand({"umoci", "raw", "unpack", "--image", layout_dir + ":" + tag,
                                    partial + "/rootfs"})
                        .status();
  if (!unpacked.ok()) {
    fs::remove_all(partial, ec);
    return unpacked.WithContext("unpack " + tag);
  }
  LS_RETURN_IF_ERROR(WriteFileAtomically(partial + "/config.json", config_blob));
  fs::remove_all(dir, ec);
  fs::rename(partial, dir, ec);
  if (ec) return InternalError("rename " + partial + ": " + ec.message());
  return Status::Ok();
}

StatusOr<std::vector<std::string>> ImageStore::Import(const std::string& layout_dir) {
  std::error_code ec;
  fs::create_directories(root_ + "/refs", ec);
  if (ec) return InternalError("create " + root_ + ": " + ec.message());
  StoreLock lock(root_);
  if (!lock.ok()) return InternalError("cannot lock " + root_ + "/.lock");
  LS_ASSIGN_OR_RETURN(std::string index_text, ReadSmallFile(layout_dir + "/index.json"));
  LS_ASSIGN_OR_RETURN(json index, ParseJson(index_text, layout_dir + "/index.json"));
  std::vector<std::string> imported;
  for (const json& desc : index.value("manifests", json::array())) {
    const std::string tag = desc.value("annotations", json::object()).value(kRefAnnotation, "");
    if (tag.empty()) continue;  // untagged: no name a pod could use
    const std::string digest = desc.value("digest", "");
    LS_ASSIGN_OR_RETURN(std::string manifest_text, ReadBlob(layout_dir, digest));
    LS_ASSIGN_OR_RETURN(json manifest, ParseJson(manifest_text, "manifest " + digest));
    if (!manifest.contains("layers")) {
      return UnimplementedError(tag + ": an image index; only single-platform images are stored");
    }
    const std::string config_digest = manifest.value("config", json::object()).value("digest", "");
    LS_ASSIGN_OR_RETURN(std::string config_blob, ReadBlob(layout_dir, config_digest));
    LS_ASSIGN_OR_RETURN(json config, ParseJson(config_blob, "config " + config_digest));
    LS_RETURN_IF_ERROR(ParseImageConfig(config).status().WithContext(tag));
    LS_RETURN_IF_ERROR(Unpack(layout_dir, tag, digest, config_blob));
    const std::string reference = NormalizeImageReference(tag);
    LS_RETURN_IF_ERROR(WriteFileAtomically(root_ + "/refs/" + RefFileName(reference), digest));
    imported.push_back(reference + " " + digest);
  }
  if (imported.empty()) return NotFoundError(layout_dir + " holds no tagged image");
  return imported;
}

std::optional<StoredImage> ImageStore::Load(const std::string& reference,
                                            const std::string& digest) const {
  const std::string hex = DigestHex(digest);
  if (hex.empty()) return std::nullopt;
  const std::string dir = root_ + "/sha256-" + hex;
  StatusOr<std::string> blob = ReadSmallFile(dir + "/config.json");
  if (!blob.ok()) return std::nullopt;
  StatusOr<json> config_json = ParseJson(*blob, dir + "/config.json");
  if (!config_json.ok()) return std::nullopt;
  StatusOr<ImageConfig> config = ParseImageConfig(*config_json);
  if (!config.ok()) return std::nullopt;
  return StoredImage{reference, digest, dir + "/rootfs", std::move(config).value()};
}

std::optional<StoredImage> ImageStore::Find(const std::string& image) const {
  const std::string reference = NormalizeImageReference(image);
  const size_t at = reference.find('@');
  if (at != std::string::npos) return Load(reference, reference.substr(at + 1));
  StatusOr<std::string> digest = ReadSmallFile(root_ + "/refs/" + RefFileName(reference));
  if (!digest.ok()) return std::nullopt;
  return Load(reference, *digest);
}

}  // namespace lockstep::e2e
