// The transform's side of the options (loader/transform_spec.h).
#include "loader/transform_spec.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace forkfeed {
namespace {

PipelineOptions pipeline_options_of(const LoaderOptions& o) {
  return {o.size, o.dtype, o.mean, o.std, o.max_pixels};
}

}  // namespace

Result<Pipeline> pipeline_of(const LoaderOptions& o) {
  if (o.transform.size() >= kTransformTextBytes) {
    return Status::InvalidArgument("transform is " + std::to_string(o.transform.size()) +
                                   " characters; at most " + std::to_string(kTransformTextBytes - 1) +
                                   " fit");
  }
  if (o.transform.find('\0') != std::string::npos)
    return Status::InvalidArgument("transform holds a NUL character");
  return Pipeline::build(o.transform, pipeline_options_of(o));
}

Result<LoaderOptions> resolve_transform(const LoaderOptions& o) {
  auto pipeline = pipeline_of(o);
  if (!pipeline.ok()) return pipeline.status();
  LoaderOptions resolved = o;
  resolved.size = pipeline->size();
  resolved.dtype = pipeline->dtype();
  return resolved;
}

TransformSpec transform_spec(const LoaderOptions& o) {
  TransformSpec t{};
  std::memcpy(t.pipeline, o.transform.data(), std::min(o.transform.size(), kTransformTextBytes - 1));
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
