#include "launcher/supervisor/output_tail.h"

namespace lockstep::launcher::supervisor {

void OutputTail::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const size_t room = max_line_bytes_ - std::min(partial_.size(), max_line_bytes_);
    if (nl == std::string_view::npos) {
      partial_.append(bytes.substr(0, room));
      return;
    }
    partial_.append(bytes.substr(0, std::min(nl, room)));
    Push(std::move(partial_));
    partial_.clear();
    bytes.remove_prefix(nl + 1);
  }
}

void OutputTail::Push(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  lines_.push_back(std::move(line));
  while (lines_.size() > max_lines_) lines_.pop_front();
}

std::vector<std::string> OutputTail::Lines() const {
  std::vector<std::string> out(lines_.begin(), lines_.end());
  if (!partial_.empty()) out.push_back(partial_);
  if (out.size() > max_lines_) out.erase(out.begin());
  return out;
}

}  // namespace lockstep::launcher::supervisor
