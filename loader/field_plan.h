// The arena's side of a sample schema: each field's region in the slots (dense, or ragged
// and sized for the dataset's worst batch), where the index keeps it, and each image
// field's transform — what the workers need to write a sample field by field.
#pragma once

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "transport/arena.h"

namespace forkfeed {

// Adds the fields of `index` (indexed by `resolved`'s schema) to `spec`, and the samples'
// keys after them (kKeyField); nothing without fields. Errors name the field: an image field's pipeline that
// does not build.
Status add_fields(ArenaSpec& spec, const LoaderOptions& resolved, const DatasetIndex& index);

}  // namespace forkfeed
