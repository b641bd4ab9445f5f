// How many batch slots a loader's arena holds, and what they cost.
#pragma once

#include <cstdint>

#include "forkfeed/options.h"

namespace forkfeed {

struct ArenaSpec;

// Every worker may hold `prefetch` batches in flight, and the caller one more.
inline std::uint32_t slot_count(const LoaderOptions& o) { return o.workers * o.prefetch + 1; }
// Bytes of pixels in all slots together.
std::uint64_t arena_batch_bytes(const LoaderOptions& o);
// The arena a loader with these options lays out, with a channel per worker of its pool.
ArenaSpec arena_spec(const LoaderOptions& o, std::uint32_t pool_workers);

}  // namespace forkfeed
