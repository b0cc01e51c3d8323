#pragma once
// LineSplitter: cuts a streamed HTTP body (a watch: one JSON event per line) into lines for a
// LineHandler, keeping a partial line between chunks. Pure and single-threaded; the curl
// transport owns one per stream, the watch-stream fuzz target drives it directly.
//
// Bounded: a partial line longer than max_line_bytes ends the stream (kTooLong) instead of
// buffering without limit. One watch event holds one object, which the apiserver caps far below
// the default bound (etcd refuses requests over 1.5 MiB; objects are stored as they are sent).

#include <cstddef>
#include <string>
#include <string_view>

#include "operator/kube/transport.h"

namespace lockstep::kube {

inline constexpr size_t kMaxStreamLineBytes = 64 * 1024 * 1024;

class LineSplitter {
 public:
  enum class Result {
    kMore,      // every complete line was handled; more bytes may follow
    kStopped,   // the handler returned false: the stream must end
    kTooLong,   // a line exceeded max_line_bytes: the stream must end
  };

  explicit LineSplitter(size_t max_line_bytes = kMaxStreamLineBytes)
      : max_line_bytes_(max_line_bytes) {}

  // Hands every line completed by `chunk` (without its '\n'; empty lines are skipped) to
  // `on_line`, in order. After kStopped or kTooLong the splitter must not be used again.
  Result Append(std::string_view chunk, const LineHandler& on_line);

  // Bytes of the current partial line.
  size_t buffered() const { return partial_.size(); }

 private:
  const size_t max_line_bytes_;
  std::string partial_;
};

}  // namespace lockstep::kube
