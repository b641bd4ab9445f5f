// The transform option of a schema with several image fields: one pipeline for every
// image field ("RandomResizedCrop(224), RandomHorizontalFlip()": two views of one image
// draw it independently, as SimCLR's do), or one per field, named —
//   "image: RandomResizedCrop(224), RandomHorizontalFlip(); view2: RandomResizedCrop(96)"
// — sections separated by ';', each "FIELD: PIPELINE". A pipeline never holds ':' or
// ';', so the two forms cannot be mistaken for each other.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// The pipeline text of each of `image_fields`, in their order. Errors name the section or
// the field: a section for a field that is not an image field of the schema, a field
// named twice, an image field without a section when others have one.
Result<std::vector<std::string>> pipelines_by_field(std::string_view transform,
                                                    std::span<const std::string> image_fields);

}  // namespace forkfeed
