#pragma once
// ProgressFileReader: node 0's launcher reads its trainers' LOCKSTEP_PROGRESS_FILE for the
// operator's Status requests (rendezvous/server.h). Each Read() costs at most kMaxTailBytes of
// I/O, whatever the trainer wrote: only the bytes appended since the last read are scanned, and
// of those only the last kMaxTailBytes (older lines are superseded anyway). Malformed lines are
// counted once each and never fail anything; a missing file is "no report yet".
//
// Disk: once the file passed kMaxFileBytes, Read() truncates it to 0 after reading it. Trainers
// append with O_APPEND (Python's open(path, "a")) and one write per line, so their next line
// lands at the start of the emptied file; a line appended between the read and the truncation is
// lost, and the next one replaces it.
//
// Thread-safe: Read() is serialized by a mutex (the server's loop thread reads for each Status
// request, the launcher once more at exit for its termination message).

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "common/status.h"
#include "protocol/messages.h"

namespace lockstep::launcher::progress {

inline constexpr size_t kMaxTailBytes = 64u << 10;
inline constexpr size_t kMaxFileBytes = 1u << 20;

class ProgressFileReader {
 public:
  explicit ProgressFileReader(std::string path) : path_(std::move(path)) {}

  // The latest report so far (with malformed_lines), or nullopt until the trainers wrote one.
  // `reports`, when given, receives reports() as of this read.
  std::optional<protocol::TrainingProgress> Read(uint64_t* reports = nullptr);

  const std::string& path() const { return path_; }
  // Well-formed reports read so far (the reader's lifetime): tells a report read after a moment
  // from the latest one read before it, even when both name the same step.
  uint64_t reports();

 private:
  const std::string path_;
  std::mutex mu_;
  uint64_t scanned_to_ = 0;  // file offset: every complete line before it was scanned; mu_
  uint32_t malformed_ = 0;   // guarded by mu_
  uint64_t reports_ = 0;     // guarded by mu_
  std::optional<protocol::TrainingProgress> latest_;  // guarded by mu_
};

// The launcher's own directory for the progress file: a fresh mkdtemp under $TMPDIR (or /tmp),
// mode 0700 (its children run as the launcher's user). Returns the file's path in it (the file
// itself is the trainers' to create), or an error the launcher logs and lives without.
StatusOr<std::string> MakeProgressFilePath();
// Removes the file and its directory (best effort, at the launcher's exit).
void RemoveProgressFile(const std::string& path);

}  // namespace lockstep::launcher::progress
