// The transform's side of the options: checking it, resolving what it makes (size and
// dtype), and the TransformSpec the arena carries to the workers. One definition, for
// the Loader, forkfeedd and forkfeed-bench --probe, so the probe measures exactly what a
// loader run decodes.
#pragma once

#include <string>
#include <vector>

#include "forkfeed/options.h"
#include "transforms/pipeline.h"
#include "transport/arena_layout.h"

namespace forkfeed {

// The pipeline text of each image field of `o`'s schema, in its order
// (loader/field_transforms.h); without a schema, `o.transform` alone.
Result<std::vector<std::string>> image_pipelines(const LoaderOptions& o);

// The pipeline `o.transform` names (with a schema, its first image field's), built with the options it takes
// from `o`; an error names the op and the argument (or says the text is too long).
Result<Pipeline> pipeline_of(const LoaderOptions& o);

// An op that draws from the sample's boxes (RandomIoUCrop) needs a boxes field, and may
// only be in the first image field's pipeline (the one the boxes follow).
Status check_box_draws(const LoaderOptions& o);

// `o` with size and dtype set to what its transform makes. Every loader runs on resolved
// options; resolving twice changes nothing.
Result<LoaderOptions> resolve_transform(const LoaderOptions& o);

// The spec of resolved options.
TransformSpec transform_spec(const LoaderOptions& resolved);

}  // namespace forkfeed
