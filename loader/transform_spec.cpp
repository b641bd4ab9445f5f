// The transform's side of the options (loader/transform_spec.h).
#include "loader/transform_spec.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "forkfeed/fields.h"
#include "loader/field_transforms.h"

namespace forkfeed {
namespace {

PipelineOptions pipeline_options_of(const LoaderOptions& o) {
  return {o.size, o.dtype, o.mean, o.std, o.max_pixels, o.max_size};
}

}  // namespace

Result<std::vector<std::string>> image_pipelines(const LoaderOptions& o) {
  if (o.fields.empty()) return std::vector<std::string>{o.transform};
  auto fields = parse_fields(o.fields);
  if (!fields.ok()) return Status::InvalidArgument("fields: " + fields.status().message());
  std::vector<std::string> images;
  for (const FieldSpec& f : *fields) {
    if (f.kind == FieldKind::kImage) images.push_back(f.name);
  }
  if (images.empty()) {
    return Status::InvalidArgument(
        "fields \"" + o.fields +
        "\" has no image field: a loader's workers decode images, so a schema names "
        "at least one (\"image=jpg;png\"); text and arrays alone need no loader of "
        "images");
  }
  return pipelines_by_field(o.transform, images);
}

Result<Pipeline> pipeline_of(const LoaderOptions& o) {
  if (o.transform.size() >= kTransformTextBytes) {
    return Status::InvalidArgument("transform is " + std::to_string(o.transform.size()) +
                                   " characters; at most " + std::to_string(kTransformTextBytes - 1) +
                                   " fit");
  }
  if (o.transform.find('\0') != std::string::npos)
    return Status::InvalidArgument("transform holds a NUL character");
  auto texts = image_pipelines(o);
  if (!texts.ok()) return texts.status();
  return Pipeline::build(texts->front(), pipeline_options_of(o));
}

Status check_box_draws(const LoaderOptions& o) {
  auto texts = image_pipelines(o);
  if (!texts.ok()) return texts.status();
  auto fields =
      o.fields.empty() ? Result<std::vector<FieldSpec>>(std::vector<FieldSpec>{}) : parse_fields(o.fields);
  if (!fields.ok()) return Status::InvalidArgument("fields: " + fields.status().message());
  const bool boxes = std::any_of(fields->begin(), fields->end(),
                                 [](const FieldSpec& f) { return f.kind == FieldKind::kBoxes; });
  for (std::size_t i = 0; i < texts->size(); ++i) {
    auto pipeline = Pipeline::build((*texts)[i], pipeline_options_of(o));
    if (!pipeline.ok() || !pipeline->needs_boxes()) continue;
    if (i > 0) {
      return Status::InvalidArgument("transform \"" + (*texts)[i] +
                                     "\" of an image field after the first draws from the sample's boxes "
                                     "(RandomIoUCrop), which follow the first image field: put it there");
    }
    if (!boxes) {
      return Status::InvalidArgument("transform \"" + (*texts)[i] +
                                     "\" draws its crop among the sample's boxes (RandomIoUCrop), and the "
                                     "loader reads none: declare them "
                                     "in fields (\"boxes=json:boxes(key=boxes)\")");
    }
  }
  return Status::Ok();
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
  // Resolved options: their pipelines were built, so the schema parses.
  const auto texts = image_pipelines(o);
  const std::string& text = texts.ok() ? texts->front() : o.transform;
  std::memcpy(t.pipeline, text.data(), std::min(text.size(), kTransformTextBytes - 1));
  t.dtype = o.dtype;
  t.layout = resolve(o.layout, o.dtype);
  t.size = o.size;
  t.max_size = o.max_size;
  std::copy(o.mean.begin(), o.mean.end(), t.mean);
  std::copy(o.std.begin(), o.std.end(), t.std);
  t.seed = o.seed;
  t.max_pixels = o.max_pixels;
  t.max_file_bytes = o.max_file_bytes;
  return t;
}

}  // namespace forkfeed
