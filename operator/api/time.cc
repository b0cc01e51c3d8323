#include "operator/api/time.h"

#include <cstdio>
#include <ctime>

namespace lockstep::api {

std::string FormatTime(std::chrono::system_clock::time_point t) {
  const std::time_t secs =
      std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(t));
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

StatusOr<std::chrono::system_clock::time_point> ParseTime(std::string_view text) {
  const std::string s(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &consumed) != 6 ||
      consumed != 19) {
    return InvalidArgumentError("not an RFC 3339 time: \"" + s + "\"");
  }
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {  // fractional seconds: dropped (second precision)
    ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
  }
  long offset_seconds = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
    offset_seconds = 0;
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) {
      return InvalidArgumentError("bad offset in time \"" + s + "\"");
    }
    offset_seconds = (s[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
  } else {
    return InvalidArgumentError("not an RFC 3339 time: \"" + s + "\"");
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return InvalidArgumentError("time out of range: \"" + s + "\"");
  }
  std::tm utc{};
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  utc.tm_sec = second;
  const std::time_t secs = timegm(&utc) - offset_seconds;
  return std::chrono::system_clock::from_time_t(secs);
}

}  // namespace lockstep::api
