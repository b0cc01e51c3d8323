#include "common/rfc3339.h"

#include <cstdio>
#include <ctime>

namespace lockstep {
namespace {

using std::chrono::system_clock;

StatusOr<system_clock::time_point> Invalid(std::string_view text) {
  return InvalidArgumentError("not an RFC 3339 time: \"" + std::string(text) + "\"");
}

// The fraction after the seconds, as microseconds (digits past the sixth are dropped).
std::chrono::microseconds ParseFraction(const std::string& s, size_t* pos) {
  int64_t micros = 0;
  int digits = 0;
  for (; *pos < s.size() && s[*pos] >= '0' && s[*pos] <= '9'; ++*pos) {
    if (digits < 6) {
      micros = micros * 10 + (s[*pos] - '0');
      ++digits;
    }
  }
  for (; digits < 6; ++digits) micros *= 10;
  return std::chrono::microseconds(micros);
}

}  // namespace

StatusOr<system_clock::time_point> ParseTime(std::string_view text) {
  const std::string s(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &consumed) != 6 ||
      consumed != 19) {
    return Invalid(text);
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return InvalidArgumentError("time out of range: \"" + s + "\"");
  }
  size_t pos = 19;
  std::chrono::microseconds fraction{0};
  if (pos < s.size() && s[pos] == '.') fraction = ParseFraction(s, &++pos);
  long offset_seconds = 0;
  if (pos + 1 == s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    offset_seconds = 0;
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) return Invalid(text);
    offset_seconds = (s[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
  } else {
    return Invalid(text);
  }
  std::tm utc{};
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  utc.tm_sec = second;
  return system_clock::from_time_t(timegm(&utc) - offset_seconds) + fraction;
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
