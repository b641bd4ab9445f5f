// splitmix64: the one hash behind every random choice of forkfeed-mkdata, so that a
// dataset is a pure function of its seed on every platform and compiler.
#pragma once

#include <cstdint>

namespace forkfeed::mkdata {

// Returns a well-mixed 64-bit value of `x`; consecutive inputs give unrelated outputs.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace forkfeed::mkdata
