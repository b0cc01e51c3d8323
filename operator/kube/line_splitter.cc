#include "operator/kube/line_splitter.h"

namespace lockstep::kube {

LineSplitter::Result LineSplitter::Append(std::string_view chunk, const LineHandler& on_line) {
  // Only the new bytes are searched: rescanning the whole partial line for every chunk was
  // quadratic in a long line's length (a 64 MiB line in 16 KiB chunks, 4096 scans).
  size_t search_from = partial_.size();
  partial_.append(chunk);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', search_from)) != std::string::npos;
       start = search_from = nl + 1) {
    std::string_view line(partial_.data() + start, nl - start);
    if (line.empty()) continue;
    if (line.size() > max_line_bytes_) return Result::kTooLong;
    if (!on_line(line)) return Result::kStopped;
  }
  partial_.erase(0, start);
  return partial_.size() > max_line_bytes_ ? Result::kTooLong : Result::kMore;
}

}  // namespace lockstep::kube
