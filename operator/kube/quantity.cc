#include "operator/kube/quantity.h"

#include <cctype>
#include <limits>
#include <string>

namespace lockstep::kube {
namespace {

__extension__ typedef __int128 int128;  // exact intermediate math; GCC and Clang
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Suffix {
  int base;      // 2 or 10
  int exponent;  // power of `base`
};

// Returns false for an unknown suffix.
bool ParseSuffix(std::string_view s, Suffix* out) {
  static constexpr struct {
    std::string_view name;
    Suffix value;
  } kTable[] = {
      {"", {10, 0}},   {"n", {10, -9}}, {"u", {10, -6}},  {"m", {10, -3}},  {"k", {10, 3}},
      {"M", {10, 6}},  {"G", {10, 9}},  {"T", {10, 12}},  {"P", {10, 15}},  {"E", {10, 18}},
      {"Ki", {2, 10}}, {"Mi", {2, 20}}, {"Gi", {2, 30}},  {"Ti", {2, 40}},  {"Pi", {2, 50}},
      {"Ei", {2, 60}},
  };
  for (const auto& entry : kTable) {
    if (entry.name == s) {
      *out = entry.value;
      return true;
    }
  }
  if (s.size() >= 2 && (s[0] == 'e' || s[0] == 'E')) {  // decimal exponent, e.g. 1e3, 5E-2
    try {
      size_t used = 0;
      const int exp = std::stoi(std::string(s.substr(1)), &used);
      if (used != s.size() - 1 || exp < -30 || exp > 30) return false;
      *out = {10, exp};
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

}  // namespace

StatusOr<int64_t> ParseQuantityMilli(std::string_view text) {
  auto invalid = [&] { return InvalidArgumentError("invalid quantity \"" + std::string(text) + "\""); };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  // Mantissa as an exact integer `digits` scaled by 10^-frac_digits. Fraction digits beyond 18
  // only matter for rounding up, so they just set `inexact`.
  int128 digits = 0;
  int frac_digits = 0;
  bool any_digit = false;
  bool in_fraction = false;
  bool inexact = false;
  constexpr int128 kDigitCap = int128(1000000000000000000);  // 1e18
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    any_digit = true;
    if (in_fraction && (frac_digits >= 18 || digits > kDigitCap)) {
      inexact = inexact || c != '0';
      continue;
    }
    digits = digits * 10 + (c - '0');
    if (in_fraction) ++frac_digits;
    if (!in_fraction && digits > kDigitCap) digits = kDigitCap;  // saturates below anyway
  }
  Suffix suffix;
  if (!any_digit || !ParseSuffix(text.substr(i), &suffix)) return invalid();

  // value_milli = digits * base^exp * 1000 / 10^frac_digits, rounded up (away from zero).
  const int64_t saturated = negative ? -kMax : kMax;
  const int neg_power =
      frac_digits + (suffix.base == 10 && suffix.exponent < 0 ? -suffix.exponent : 0);
  if (neg_power > 36) return (digits != 0 || inexact) ? (negative ? -1 : 1) : 0;
  int128 num = digits * 1000;
  int128 den = 1;
  for (int k = 0; k < neg_power; ++k) den *= 10;
  // With more than 18 negative powers there is no positive multiplier and num <= 1e21, so no
  // overflow is possible; otherwise den <= 1e18 and kMax * den fits in 128 bits.
  if (neg_power <= 18) {
    const int128 limit = int128(kMax) * den;
    const int multiplier = suffix.exponent > 0 ? suffix.base : 1;
    for (int k = 0; multiplier > 1 && k < suffix.exponent; ++k) {
      if (num > limit / multiplier) return saturated;
      num *= multiplier;
    }
    if (num > limit) return saturated;
  }
  int128 value = num / den + ((num % den != 0 || inexact) ? 1 : 0);
  if (value > kMax) value = kMax;
  const int64_t result = static_cast<int64_t>(value);
  return negative ? -result : result;
}

}  // namespace lockstep::kube
