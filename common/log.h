#pragma once
// Structured logging to stderr, as text (human) or JSON lines (log pipelines). Thread-safe: each
// record is formatted first and written with one call, so lines from threads never interleave.
// Never log secrets: tokens, keys and Secret data must not reach a Field.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep::log {

enum class Level { kDebug = 0, kInfo, kWarning, kError };
enum class Format { kText, kJson };

using Field = std::pair<std::string, std::string>;
using Fields = std::vector<Field>;

// Process-wide settings; set once at start-up from flags.
void SetFormat(Format format);
void SetMinLevel(Level level);
// Parses "json" or "text"; false on anything else.
bool ParseFormat(std::string_view text, Format* out);
// Prefixes every record with this component name (e.g. "operator", "launcher[3]").
void SetComponent(std::string component);

void Write(Level level, std::string_view message, const Fields& fields = {});
inline void Debug(std::string_view m, const Fields& f = {}) { Write(Level::kDebug, m, f); }
inline void Info(std::string_view m, const Fields& f = {}) { Write(Level::kInfo, m, f); }
inline void Warning(std::string_view m, const Fields& f = {}) { Write(Level::kWarning, m, f); }
inline void Error(std::string_view m, const Fields& f = {}) { Write(Level::kError, m, f); }

// Formats one record without writing it (exposed for tests).
std::string FormatRecord(Format format, Level level, std::string_view component,
                         std::string_view message, const Fields& fields);

}  // namespace lockstep::log
