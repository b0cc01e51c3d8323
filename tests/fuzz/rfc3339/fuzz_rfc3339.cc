// Fuzz target for the RFC 3339 parser and formatters (common/rfc3339.h), which read every
// metav1.Time and MicroTime the operator decodes (conditions, Leases, status times). Checked
// beyond "no crash", against an independent reading of RFC 3339 section 5.6:
//   - an accepted text has the grammar's shape (digits where digits go, 'T', 'Z' or an offset)
//     and every field in range, the day within its month;
//   - what was accepted formats (MicroTime) into text that parses back to the same instant, and
//     (Time) into the same instant floored to the second.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.h"
#include "common/rfc3339.h"

namespace lockstep {
namespace {

bool Digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return false;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

int Number(std::string_view s, size_t pos, size_t n) {
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

int DaysIn(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// date-time = full-date "T" full-time; time-secfrac = "." 1*DIGIT; time-offset = "Z" / numoffset.
// Lower-case 't' is not accepted (Kubernetes writes 'T'); 'z' is, as the parser documents.
bool IsRfc3339(std::string_view s) {
  if (!Digits(s, 0, 4) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2) || s[7] != '-' ||
      !Digits(s, 8, 2) || s[10] != 'T' || !Digits(s, 11, 2) || s[13] != ':' ||
      !Digits(s, 14, 2) || s[16] != ':' || !Digits(s, 17, 2)) {
    return false;
  }
  const int year = Number(s, 0, 4), month = Number(s, 5, 2), day = Number(s, 8, 2);
  if (month < 1 || month > 12 || day < 1 || day > DaysIn(year, month)) return false;
  if (Number(s, 11, 2) > 23 || Number(s, 14, 2) > 59 || Number(s, 17, 2) > 60) return false;
  size_t pos = 19;
  if (s[pos] == '.') {
    const size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return false;
  }
  const std::string_view offset = s.substr(pos);
  if (offset == "Z" || offset == "z") return true;
  return offset.size() == 6 && (offset[0] == '+' || offset[0] == '-') && Digits(offset, 1, 2) &&
         offset[3] == ':' && Digits(offset, 4, 2) && Number(offset, 1, 2) <= 23 &&
         Number(offset, 4, 2) <= 59;
}

}  // namespace
}  // namespace lockstep

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  using std::chrono::system_clock;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const StatusOr<system_clock::time_point> t = ParseTime(text);
  if (!t.ok()) return 0;
  LS_CHECK(IsRfc3339(text));
  const StatusOr<system_clock::time_point> micro = ParseTime(FormatMicroTime(*t));
  LS_CHECK(micro.ok() && *micro == *t);
  const StatusOr<system_clock::time_point> secs = ParseTime(FormatTime(*t));
  LS_CHECK(secs.ok() && *secs == std::chrono::floor<std::chrono::seconds>(*t));
  return 0;
}
