#pragma once
// An enum's names as one table of (value, name) pairs: the name of a value (NameOf) and the value
// of a name (ValueOf) come from the same rows, so a name is added in exactly one place. The API's
// enums (operator/api/enums.cc) and every other enum that has names for logs, metrics labels or
// condition reasons use it instead of a switch of their own. Pure and constexpr.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace lockstep {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

// `unknown` for a value the table does not list (a table that lists every enumerator never
// returns it).
template <typename E, size_t N>
constexpr std::string_view NameOf(const NameTable<E, N>& table, E value,
                                  std::string_view unknown = "") {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return unknown;
}

template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace lockstep
