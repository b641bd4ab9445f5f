// The arena a plan lays out for its index: the slots (plan/slot_count.h), the first image
// field's transform, and with a schema each field's region in the slots (dense, or ragged
// and sized for the dataset's worst batch), where the index keeps it, and each image
// field's transform — what the workers need to write a sample field by field.
#pragma once

#include <cstdint>

#include "forkfeed/dataset.h"
#include "forkfeed/status.h"
#include "plan/stream_plan.h"
#include "transport/arena.h"

namespace forkfeed {

// The arena of `plan` for `index` (opened with plan.schema()), a channel for each of
// `pool_workers`; with fields, the samples' keys after them (kKeyField). Errors name the
// field: a mask or boxes after an op whose moves no record can say.
Result<ArenaSpec> arena_spec(const StreamPlan& plan, const DatasetIndex& index, std::uint32_t pool_workers);

}  // namespace forkfeed
