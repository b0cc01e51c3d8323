#pragma once
// The last lines a child wrote to stderr, kept in a bounded ring for the termination message.
// Pure; partial lines are kept until their newline arrives (or shown as-is at the end).

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::launcher::supervisor {

class OutputTail {
 public:
  explicit OutputTail(size_t max_lines = 20, size_t max_line_bytes = 400)
      : max_lines_(max_lines), max_line_bytes_(max_line_bytes) {}

  void Append(std::string_view bytes);
  // Complete lines, then the unterminated remainder if any; oldest first.
  std::vector<std::string> Lines() const;

 private:
  void Push(std::string line);
  size_t max_lines_;
  size_t max_line_bytes_;
  std::deque<std::string> lines_;
  std::string partial_;
};

}  // namespace lockstep::launcher::supervisor
