// Each image field's transform, built once (plan/image_plan.h).
#include "plan/image_plan.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "plan/field_transforms.h"
#include "transforms/pipeline.h"

namespace forkfeed {
namespace {

// The pipeline text of each image field of `fields`, in its order; without a schema,
// `o.transform` alone.
Result<std::vector<std::string>> image_pipelines(const LoaderOptions& o, const std::vector<FieldSpec>& fields,
                                                 std::vector<std::string>& names) {
  if (fields.empty()) {
    names.assign(1, "");
    return std::vector<std::string>{o.transform};
  }
  for (const FieldSpec& f : fields) {
    if (f.kind == FieldKind::kImage) names.push_back(f.name);
  }
  if (names.empty()) {
    return Status::InvalidArgument(
        "fields \"" + o.fields +
        "\" has no image field: a loader's workers decode images, so a schema names "
        "at least one (\"image=jpg;png\"); text and arrays alone need no loader of "
        "images");
  }
  return pipelines_by_field(o.transform, names);
}

// `text` built with the options it takes from `o`, at `size` in `dtype`: the plan of it.
Result<ImagePlan> plan_image(const LoaderOptions& o, const std::string& text, std::uint32_t size,
                             DType dtype) {
  auto built = Pipeline::build(text, {size, dtype, o.mean, o.std, o.max_pixels, o.max_size});
  if (!built.ok()) return built.status();
  ImagePlan plan;
  plan.needs_boxes = built->needs_boxes();
  plan.unrepeatable = built->unrepeatable();
  TransformSpec& t = plan.transform;
  t = TransformSpec{};
  std::memcpy(t.pipeline, text.data(), std::min(text.size(), kTransformTextBytes - 1));
  t.dtype = built->dtype();
  t.layout = resolve(o.layout, t.dtype);
  t.size = built->size();
  t.max_size = o.max_size;
  std::copy(o.mean.begin(), o.mean.end(), t.mean);
  std::copy(o.std.begin(), o.std.end(), t.std);
  t.seed = o.seed;
  t.max_pixels = o.max_pixels;
  t.max_file_bytes = o.max_file_bytes;
  return plan;
}

// An op that draws from the sample's boxes (RandomIoUCrop) needs a boxes field, and may
// only be in the first image field's pipeline (the one the boxes follow).
Status check_box_draws(const std::vector<ImagePlan>& images, const std::vector<FieldSpec>& fields) {
  const bool boxes = std::any_of(fields.begin(), fields.end(),
                                 [](const FieldSpec& f) { return f.kind == FieldKind::kBoxes; });
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (!images[i].needs_boxes) continue;
    const std::string text = images[i].transform.pipeline;
    if (i > 0) {
      return Status::InvalidArgument("transform \"" + text +
                                     "\" of an image field after the first draws from the sample's boxes "
                                     "(RandomIoUCrop), which follow the first image field: put it there");
    }
    if (!boxes) {
      return Status::InvalidArgument("transform \"" + text +
                                     "\" draws its crop among the sample's boxes (RandomIoUCrop), and the "
                                     "loader reads none: declare them "
                                     "in fields (\"boxes=json:boxes(key=boxes)\")");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ImagePlan>> plan_images(const LoaderOptions& o, const std::vector<FieldSpec>& fields) {
  if (o.transform.size() >= kTransformTextBytes) {
    return Status::InvalidArgument("transform is " + std::to_string(o.transform.size()) +
                                   " characters; at most " + std::to_string(kTransformTextBytes - 1) +
                                   " fit");
  }
  if (o.transform.find('\0') != std::string::npos)
    return Status::InvalidArgument("transform holds a NUL character");
  std::vector<std::string> names;
  auto texts = image_pipelines(o, fields, names);
  if (!texts.ok()) return texts.status();
  std::vector<ImagePlan> images;
  for (std::size_t i = 0; i < texts->size(); ++i) {
    const std::string& text = (*texts)[i];
    if (i > 0 && text == texts->front()) {  // a view of the first: it makes what the first makes
      ImagePlan view = images.front();
      view.field = names[i];
      images.push_back(std::move(view));
      continue;
    }
    auto image = i == 0 ? plan_image(o, text, o.size, o.dtype)
                        : plan_image(o, text, 0, images.front().transform.dtype);
    if (!image.ok()) {
      if (i == 0) return image.status();
      return Status::InvalidArgument("field '" + names[i] + "': " + image.status().message());
    }
    image->field = names[i];
    images.push_back(std::move(image).value());
  }
  if (Status s = check_box_draws(images, fields); !s.ok()) return s;
  return images;
}

}  // namespace forkfeed
