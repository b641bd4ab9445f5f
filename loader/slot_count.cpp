// How many batch slots a loader's arena holds, and what they cost (loader/slot_count.h).
#include "loader/slot_count.h"

#include "loader/transform_spec.h"
#include "transport/arena.h"
#include "transport/arena_layout.h"

namespace forkfeed {

std::uint64_t arena_batch_bytes(const LoaderOptions& o) {
  return std::uint64_t{slot_count(o)} * o.batch_size * sample_bytes(o.dtype, o.size);
}

ArenaSpec arena_spec(const LoaderOptions& o, std::uint32_t pool_workers) {
  return ArenaSpec{.num_workers = pool_workers,
                   .num_slots = slot_count(o),
                   .batch_size = o.batch_size,
                   .sample_bytes = sample_bytes(o.dtype, o.size),
                   .transform = transform_spec(o),
                   .on_error = o.on_error,
                   .weight = o.weight};
}

}  // namespace forkfeed
