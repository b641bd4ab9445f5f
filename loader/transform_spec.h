// transform_spec(): the part of LoaderOptions a worker's transform needs, in the form
// the arena carries to the workers. One definition, for the Loader and for
// forkfeed-bench --probe, so the probe measures exactly what a loader run decodes.
#pragma once

#include "forkfeed/options.h"
#include "transport/arena_layout.h"

namespace forkfeed {

TransformSpec transform_spec(const LoaderOptions& options);

}  // namespace forkfeed
