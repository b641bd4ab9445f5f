// Futex wait/wake on a 32-bit counter in shared memory, so processes sleep instead of
// spinning while they wait for tasks or completions. Process-shared (not FUTEX_PRIVATE).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace forkfeed {

// Sleeps while *word == expected, at most |timeout|. Returns on wake, timeout, signal or
// if *word already differs; callers re-check their condition.
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::chrono::milliseconds timeout);
// Bumps *word and wakes every waiter.
void futex_ring(std::atomic<std::uint32_t>* word);

}  // namespace forkfeed
