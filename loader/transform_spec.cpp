// transform_spec(): LoaderOptions to the TransformSpec the arena carries.
#include "loader/transform_spec.h"

#include <algorithm>

namespace forkfeed {

TransformSpec transform_spec(const LoaderOptions& o) {
  TransformSpec t{};
  t.kind = o.transform;
  t.dtype = o.dtype;
  t.layout = resolve(o.layout, o.dtype);
  t.size = o.size;
  std::copy(o.mean.begin(), o.mean.end(), t.mean);
  std::copy(o.std.begin(), o.std.end(), t.std);
  t.seed = o.seed;
  t.max_pixels = o.max_pixels;
  t.max_file_bytes = o.max_file_bytes;
  return t;
}

}  // namespace forkfeed
