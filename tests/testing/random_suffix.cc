#include "tests/testing/random_suffix.h"

#include <random>

namespace lockstep::testing {

std::string RandomSuffix(int length) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < length; ++i) out.push_back(kChars[rng() % 36]);
  return out;
}

}  // namespace lockstep::testing
