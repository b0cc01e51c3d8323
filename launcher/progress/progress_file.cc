#include "launcher/progress/progress_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/unique_fd.h"
#include "launcher/progress/progress_line.h"

namespace lockstep::launcher::progress {

std::optional<protocol::TrainingProgress> ProgressFileReader::Read(uint64_t* reports) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reports != nullptr) *reports = reports_;  // updated below when this read finds more
  constexpr int kFlags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;  // no FIFO can block the server
  UniqueFd fd(::open(path_.c_str(), O_RDWR | kFlags));
  // A file the trainer made read-only is still read, only never truncated.
  const bool writable = fd.valid();
  if (!writable && errno == EACCES) fd = UniqueFd(::open(path_.c_str(), O_RDONLY | kFlags));
  if (!fd.valid()) return latest_;  // not written yet (or gone): the last report stands
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return latest_;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < scanned_to_) scanned_to_ = 0;  // truncated or replaced by the trainer
  // Only the newest bytes: lines before them are superseded by the ones read.
  const uint64_t start =
      std::max<uint64_t>(scanned_to_, size > kMaxTailBytes ? size - kMaxTailBytes : 0);
  std::string chunk(static_cast<size_t>(size - start), '\0');
  size_t got = 0;
  while (got < chunk.size()) {
    const ssize_t n =
        ::pread(fd.get(), chunk.data() + got, chunk.size() - got, static_cast<off_t>(start + got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  chunk.resize(got);
  const ChunkScan scan = ScanProgressChunk(chunk, /*starts_mid_line=*/start != scanned_to_);
  const uint32_t before = malformed_;
  malformed_ += scan.malformed;
  reports_ += scan.reports;
  if (reports != nullptr) *reports = reports_;
  if (scan.latest) latest_ = scan.latest;
  scanned_to_ = start + scan.consumed;
  if (malformed_ != before) {
    log::Warning("ignored lines of the progress file that are not progress reports",
                 {{"file", path_}, {"malformed_lines", std::to_string(malformed_)}});
  }
  if (writable && size > kMaxFileBytes && ::ftruncate(fd.get(), 0) == 0) scanned_to_ = 0;
  if (latest_) latest_->malformed_lines = malformed_;
  return latest_;
}

uint64_t ProgressFileReader::reports() {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_;
}

StatusOr<std::string> MakeProgressFilePath() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/lockstep-launcher.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    return UnavailableError("cannot create a directory for the progress file (" + pattern +
                            "): " + std::strerror(errno));
  }
  return std::string(buf.data()) + "/progress.jsonl";
}

void RemoveProgressFile(const std::string& path) {
  if (path.empty()) return;
  ::unlink(path.c_str());
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) ::rmdir(path.substr(0, slash).c_str());
}

}  // namespace lockstep::launcher::progress
