#include "common/rfc3339.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace lockstep {
namespace {

using std::chrono::system_clock;

StatusOr<system_clock::time_point> Invalid(std::string_view text) {
  return InvalidArgumentError("not an RFC 3339 time: \"" + std::string(text) + "\"");
}

// Reads `n` ASCII digits at `pos` (sscanf's %d took signs and spaces: "+202-01-01..." was
// read as the year 202, "T-1:00:00" as the hour -1).
bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// The fraction after the seconds' '.', as microseconds (digits past the sixth are dropped);
// false unless at least one digit follows.
bool ParseFraction(std::string_view s, size_t* pos, std::chrono::microseconds* out) {
  const size_t start = *pos;
  int64_t micros = 0;
  int digits = 0;
  for (; *pos < s.size() && s[*pos] >= '0' && s[*pos] <= '9'; ++*pos) {
    if (digits < 6) {
      micros = micros * 10 + (s[*pos] - '0');
      ++digits;
    }
  }
  for (; digits < 6; ++digits) micros *= 10;
  *out = std::chrono::microseconds(micros);
  return *pos > start;
}

// "Z", "z" or "+hh:mm" / "-hh:mm" as seconds east of UTC.
bool ParseOffset(std::string_view s, int64_t* seconds) {
  if (s == "Z" || s == "z") {
    *seconds = 0;
    return true;
  }
  int hours = 0, minutes = 0;
  if (s.size() != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' || !Digits(s, 1, 2, &hours) ||
      !Digits(s, 4, 2, &minutes) || hours > 23 || minutes > 59) {
    return false;
  }
  *seconds = (s[0] == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
  return true;
}

// system_clock counts nanoseconds in 64 bits with libstdc++ (years 1678-2261); an instant
// beyond that saturates at the last whole second it can hold instead of overflowing.
system_clock::time_point Saturated(int64_t seconds, std::chrono::microseconds fraction) {
  using std::chrono::microseconds;
  const microseconds max = std::chrono::floor<std::chrono::seconds>(system_clock::duration::max());
  const microseconds min = std::chrono::ceil<std::chrono::seconds>(system_clock::duration::min());
  // |seconds| < 10^12 (years 0000-9999), so this cannot overflow.
  const microseconds t = std::chrono::seconds(seconds) + fraction;
  return system_clock::time_point(std::clamp(t, min, max));
}

}  // namespace

StatusOr<system_clock::time_point> ParseTime(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (text.size() < 20 || !Digits(text, 0, 4, &year) || text[4] != '-' ||
      !Digits(text, 5, 2, &month) || text[7] != '-' || !Digits(text, 8, 2, &day) ||
      text[10] != 'T' || !Digits(text, 11, 2, &hour) || text[13] != ':' ||
      !Digits(text, 14, 2, &minute) || text[16] != ':' || !Digits(text, 17, 2, &second)) {
    return Invalid(text);
  }
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  // A leap second (60) is accepted, as RFC 3339 allows, and counts as the next minute's first.
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) {
    return InvalidArgumentError("time out of range: \"" + std::string(text) + "\"");
  }
  size_t pos = 19;
  std::chrono::microseconds fraction{0};
  if (text[pos] == '.' && !ParseFraction(text, &++pos, &fraction)) return Invalid(text);
  int64_t offset_seconds = 0;
  if (!ParseOffset(text.substr(pos), &offset_seconds)) return Invalid(text);
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return Saturated(days * 86400 + hour * 3600 + minute * 60 + second - offset_seconds, fraction);
}

std::string FormatTime(system_clock::time_point t) {
  const std::time_t secs = system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(t));
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string FormatMicroTime(system_clock::time_point t) {
  const auto micros =
      std::chrono::floor<std::chrono::microseconds>(t.time_since_epoch()).count();
  const auto secs_part = micros >= 0 ? micros / 1000000 : (micros - 999999) / 1000000;
  const std::time_t secs = static_cast<std::time_t>(secs_part);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(micros - secs_part * 1000000));
  return buf;
}

}  // namespace lockstep
