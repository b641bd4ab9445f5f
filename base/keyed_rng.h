// KeyedRng: a small deterministic random stream keyed by a few integers, e.g.
// (seed, epoch) for the shuffle or (seed, epoch, sample) for a sample's crop and flip.
// Same key, same numbers, on every machine and in every process: this is what makes the
// order and the pixels independent of worker count and timing (invariant 4).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numbers>

namespace forkfeed {

class KeyedRng {
 public:
  explicit KeyedRng(std::initializer_list<std::uint64_t> key) {
    for (std::uint64_t k : key) state_ = mix(state_ ^ k);
  }

  std::uint64_t next() { return mix(state_ += 0x9e3779b97f4a7c15ULL); }

  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * (next() >> 11) * 0x1.0p-53; }

  // Standard normal (Box-Muller; one of the pair, so a draw is always two numbers).
  double normal() {
    const double u1 = 1.0 - uniform(0.0, 1.0);  // in (0, 1]: the log is finite
    const double u2 = uniform(0.0, 1.0);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  // Uniform in [0, n), without modulo bias (Lemire's multiply-shift with rejection).
  // REQUIRES: n > 0
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

 private:
  // SplitMix64's finaliser.
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t state_ = 0x6a09e667f3bcc909ULL;
};

}  // namespace forkfeed
