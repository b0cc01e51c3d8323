#pragma once
// The seeded random source of the scheduler's property tests: a failing case is replayed from
// its seed alone.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace lockstep::scheduler::testing {

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace lockstep::scheduler::testing
