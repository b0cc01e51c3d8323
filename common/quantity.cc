#include "common/quantity.h"

#include <limits>
#include <utility>

namespace lockstep {
namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr int kMaxSignificantDigits = 20;  // 10^20 * 2^60 still fits in 128 bits.
constexpr int kMaxExponent = 10000;        // Anything beyond is out of range or rounds to 0/1.
constexpr Uint128 kInt64Max = static_cast<Uint128>(std::numeric_limits<int64_t>::max());

// A parsed number: (mantissa + delta) * 10^exp10 * 2^exp2, with 0 <= delta < 1 and
// delta > 0 exactly when `sticky` (non-zero digits were dropped beyond kMaxSignificantDigits).
struct Decomposed {
  bool negative = false;
  Uint128 mantissa = 0;
  int significant_digits = 0;
  bool sticky = false;
  int exp10 = 0;
  int exp2 = 0;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

void AddDigit(Decomposed& d, char c, bool fraction) {
  const int digit = c - '0';
  if (d.significant_digits == 0 && digit == 0) {
    if (fraction) --d.exp10;  // A leading zero after the point still shifts the scale.
    return;
  }
  if (d.significant_digits < kMaxSignificantDigits) {
    d.mantissa = d.mantissa * 10 + static_cast<Uint128>(digit);
    ++d.significant_digits;
    if (fraction) --d.exp10;
    return;
  }
  if (digit != 0) d.sticky = true;
  if (!fraction) ++d.exp10;  // A dropped integer digit still multiplies the value by ten.
}

Status ParseNumber(std::string_view text, size_t& pos, Decomposed& d) {
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    d.negative = text[pos] == '-';
    ++pos;
  }
  int digits = 0;
  while (pos < text.size() && IsDigit(text[pos])) AddDigit(d, text[pos++], false), ++digits;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && IsDigit(text[pos])) AddDigit(d, text[pos++], true), ++digits;
  }
  if (digits == 0) return InvalidArgumentError("quantity has no digits");
  return Status::Ok();
}

StatusOr<int> ParseExponent(std::string_view digits) {
  bool negative = false;
  size_t pos = 0;
  if (pos < digits.size() && (digits[pos] == '+' || digits[pos] == '-')) {
    negative = digits[pos] == '-';
    ++pos;
  }
  if (pos == digits.size()) return InvalidArgumentError("exponent has no digits");
  int value = 0;
  for (; pos < digits.size(); ++pos) {
    if (!IsDigit(digits[pos])) return InvalidArgumentError("bad character in exponent");
    if (value < kMaxExponent) value = value * 10 + (digits[pos] - '0');
  }
  if (value > kMaxExponent) value = kMaxExponent;
  return negative ? -value : value;
}

Status ParseSuffix(std::string_view suffix, Decomposed& d) {
  struct Entry {
    std::string_view name;
    int exp10;
    int exp2;
  };
  static constexpr Entry kSuffixes[] = {
      {"", 0, 0},    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50},
      {"Ei", 0, 60}, {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
      {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
  };
  for (const Entry& e : kSuffixes) {
    if (suffix == e.name) {
      d.exp10 += e.exp10;
      d.exp2 += e.exp2;
      return Status::Ok();
    }
  }
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    LS_ASSIGN_OR_RETURN(int exponent, ParseExponent(suffix.substr(1)));
    d.exp10 += exponent;
    return Status::Ok();
  }
  return InvalidArgumentError("unknown quantity suffix \"" + std::string(suffix) + "\"");
}

// floor(|value| * 10^extra_exp10) and whether it is exact, or OutOfRange.
StatusOr<std::pair<Uint128, bool>> ScaledMagnitude(const Decomposed& d, int extra_exp10) {
  const int exp10 = d.exp10 + extra_exp10;
  const Uint128 two_pow = static_cast<Uint128>(1) << d.exp2;
  if (d.mantissa == 0 && !d.sticky) return std::make_pair(Uint128{0}, true);
  if (exp10 >= 0) {
    // Sticky here means more than 20 integer digits: at least 10^19, beyond int64 anyway.
    if (d.sticky) return OutOfRangeError("quantity too large");
    Uint128 v = d.mantissa;
    if (v > kInt64Max / two_pow) return OutOfRangeError("quantity too large");
    v *= two_pow;
    for (int i = 0; i < exp10; ++i) {
      if (v > kInt64Max / 10) return OutOfRangeError("quantity too large");
      v *= 10;
    }
    return std::make_pair(v, true);
  }
  const int k = -exp10;
  if (k > 38) return std::make_pair(Uint128{0}, false);  // 0 < value < 1: mantissa*2^60 < 10^39.
  Uint128 divisor = 1;
  for (int i = 0; i < k; ++i) divisor *= 10;
  const Uint128 quotient = d.mantissa / divisor;
  const Uint128 remainder = d.mantissa % divisor;
  if (quotient > kInt64Max / two_pow) return OutOfRangeError("quantity too large");
  const Uint128 whole = quotient * two_pow + (remainder * two_pow) / divisor;
  const bool exact = !d.sticky && (remainder * two_pow) % divisor == 0;
  if (whole > kInt64Max) return OutOfRangeError("quantity too large");
  return std::make_pair(whole, exact);
}

// Rounds towards +infinity, like Quantity.Value() / MilliValue().
StatusOr<int64_t> Parse(std::string_view text, int extra_exp10) {
  if (text.empty()) return InvalidArgumentError("empty quantity");
  Decomposed d;
  size_t pos = 0;
  Status number = ParseNumber(text, pos, d);
  if (!number.ok()) return number.WithContext("quantity \"" + std::string(text) + "\"");
  Status suffix = ParseSuffix(text.substr(pos), d);
  if (!suffix.ok()) return suffix.WithContext("quantity \"" + std::string(text) + "\"");
  auto scaled = ScaledMagnitude(d, extra_exp10);
  if (!scaled.ok()) return scaled.status().WithContext("quantity \"" + std::string(text) + "\"");
  const auto [floor_magnitude, exact] = *scaled;
  const int64_t magnitude = static_cast<int64_t>(floor_magnitude);
  if (d.negative) return -magnitude;  // ceil(-x) == -floor(x)
  if (!exact && magnitude == std::numeric_limits<int64_t>::max()) {
    return OutOfRangeError("quantity \"" + std::string(text) + "\" too large");
  }
  return exact ? magnitude : magnitude + 1;
}

}  // namespace

StatusOr<int64_t> ParseQuantity(std::string_view text) { return Parse(text, 0); }

StatusOr<int64_t> ParseMilliQuantity(std::string_view text) { return Parse(text, 3); }

}  // namespace lockstep
