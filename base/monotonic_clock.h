// One clock for timestamps that cross processes: steady_clock is CLOCK_MONOTONIC on
// Linux, the same in every process of the machine.
#pragma once

#include <chrono>
#include <cstdint>

namespace forkfeed {

inline std::uint64_t monotonic_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace forkfeed
