// Each image field's transform, built once: its pipeline text and what its build says it
// makes (size, dtype, max_size, whether it draws from boxes, whether a geometry record can
// repeat it). The one definition for the Loader, forkfeedd and forkfeed-bench --probe, so
// the probe measures exactly what a loader run decodes.
#pragma once

#include <string>
#include <vector>

#include "forkfeed/fields.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "transport/arena_layout.h"

namespace forkfeed {

struct ImagePlan {
  std::string field;  // the image field's name; "" without a schema
  // What the workers run: the pipeline's text, with the size (0: each sample its own, at
  // most max_size a side), dtype and layout it makes, and the options it reads.
  TransformSpec transform;
  bool needs_boxes = false;  // an op draws among the sample's boxes (RandomIoUCrop)
  // The first op whose moves no geometry record can say (Pipeline::unrepeatable); "": none.
  std::string unrepeatable;
};

// The image fields of `fields` (parse_fields of o.fields; empty: one image, o.transform),
// in the schema's order, each pipeline built once with the options it takes from `o`. The
// first makes o.size (0: its own) in o.dtype; a field sharing the first's pipeline (a view)
// makes what the first makes; one with a pipeline of its own makes its own size in the
// first's dtype. Errors name the op and the argument (for a field after the first, the
// field), a schema without an image field, an op drawing from boxes that no field reads.
Result<std::vector<ImagePlan>> plan_images(const LoaderOptions& o, const std::vector<FieldSpec>& fields);

}  // namespace forkfeed
