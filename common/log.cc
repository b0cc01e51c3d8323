#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "common/clock.h"

namespace lockstep::log {
namespace {

std::atomic<Format> g_format{Format::kText};
std::atomic<Level> g_min_level{Level::kInfo};
std::mutex g_component_mu;
std::string g_component;  // guarded by g_component_mu

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarning: return "warning";
    case Level::kError: return "error";
  }
  return "info";
}

void AppendJsonString(std::string* out, std::string_view text) {
  out->push_back('"');
  for (char c : text) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string Timestamp() {
  const auto now = RealClock::Get().WallNow();  // log lines carry real time, whoever logs
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // generous: -Wformat-truncation assumes full int ranges
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

// Text values with spaces or quotes are quoted so `key=value` stays parseable.
void AppendTextValue(std::string* out, std::string_view value) {
  if (value.find_first_of(" \"=\t\n") == std::string_view::npos && !value.empty()) {
    out->append(value);
  } else {
    AppendJsonString(out, value);
  }
}

}  // namespace

void SetFormat(Format format) { g_format = format; }
void SetMinLevel(Level level) { g_min_level = level; }

bool ParseFormat(std::string_view text, Format* out) {
  if (text == "json") *out = Format::kJson;
  else if (text == "text") *out = Format::kText;
  else return false;
  return true;
}

void SetComponent(std::string component) {
  std::lock_guard<std::mutex> lock(g_component_mu);
  g_component = std::move(component);
}

std::string FormatRecord(Format format, Level level, std::string_view component,
                         std::string_view message, const Fields& fields) {
  std::string out;
  out.reserve(128);
  if (format == Format::kJson) {
    out.append("{\"ts\":\"").append(Timestamp()).append("\",\"level\":\"");
    out.append(LevelName(level)).append("\"");
    if (!component.empty()) {
      out.append(",\"component\":");
      AppendJsonString(&out, component);
    }
    out.append(",\"msg\":");
    AppendJsonString(&out, message);
    for (const auto& [key, value] : fields) {
      out.push_back(',');
      AppendJsonString(&out, key);
      out.push_back(':');
      AppendJsonString(&out, value);
    }
    out.append("}\n");
    return out;
  }
  out.append(Timestamp()).push_back(' ');
  out.append(LevelName(level)).push_back(' ');
  if (!component.empty()) out.append(component).append(": ");
  out.append(message);
  for (const auto& [key, value] : fields) {
    out.push_back(' ');
    out.append(key).push_back('=');
    AppendTextValue(&out, value);
  }
  out.push_back('\n');
  return out;
}

void Write(Level level, std::string_view message, const Fields& fields) {
  if (level < g_min_level.load()) return;
  std::string component;
  {
    std::lock_guard<std::mutex> lock(g_component_mu);
    component = g_component;
  }
  const std::string record = FormatRecord(g_format.load(), level, component, message, fields);
  // One write(2) per record: atomic with respect to other threads and processes for pipes.
  ssize_t ignored = ::write(STDERR_FILENO, record.data(), record.size());
  (void)ignored;
}

}  // namespace lockstep::log
