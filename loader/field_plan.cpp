// A schema's fields in the arena (loader/field_plan.h).
#include "loader/field_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "loader/transform_spec.h"
#include "workers/box_values.h"

namespace forkfeed {
namespace {

// An image field's region and transform: the options with its pipeline, resolved. The
// size option is the first image field's, and that of every field with the same pipeline
// (views); a field with a pipeline of its own makes what it makes.
Status plan_image(const LoaderOptions& resolved, const std::string& pipeline, const std::string& first,
                  FieldDemand& d, TransformSpec& transform) {
  LoaderOptions o = resolved;
  o.fields.clear();  // its own pipeline, alone
  o.transform = pipeline;
  if (pipeline != first) o.size = 0;
  auto image = resolve_transform(o);
  if (!image.ok()) return Status::InvalidArgument("field '" + d.name + "': " + image.status().message());
  d.element = image->dtype == DType::kUint8 ? ElementType::kUint8 : ElementType::kFloat32;
  transform = transform_spec(*image);
  if (image->size == 0) {  // each sample its own size: ragged, room for the largest
    d.ragged = true;
    d.ragged_bytes = std::uint64_t{resolved.batch_size} * sample_bytes(image->dtype, image->max_size);
    return Status::Ok();
  }
  const auto s = static_cast<std::int64_t>(image->size);
  const Layout layout = resolve(image->layout, image->dtype);
  d.shape = layout == Layout::kNhwc ? std::vector<std::int64_t>{s, s, 3} : std::vector<std::int64_t>{3, s, s};
  return Status::Ok();
}

// A field that follows the first image field's geometry (a mask or boxes): its pipeline's
// every op must say what it does to where pixels are (Pipeline::unrepeatable). The
// pipeline, for a mask's size.
Result<Pipeline> plan_follower(const LoaderOptions& resolved, const std::vector<FieldSpec>& fields,
                               const std::string& pipeline, const FieldDemand& d) {
  const auto image = std::find_if(fields.begin(), fields.end(),
                                  [](const FieldSpec& f) { return f.kind == FieldKind::kImage; });
  LoaderOptions o = resolved;
  o.fields.clear();
  o.transform = pipeline;
  auto built = pipeline_of(o);
  if (!built.ok()) return Status::InvalidArgument("field '" + image->name + "': " + built.status().message());
  if (!built->unrepeatable().empty()) {
    const std::string follower = d.kind == FieldKind::kMask ? "mask" : "boxes";
    return Status::InvalidArgument("transform op " + built->unrepeatable() + " of image field '" +
                                   image->name + "' has no rule for " + follower + " field '" + d.name +
                                   "': it blends copies of the image moved in different ways, so no " +
                                   follower +
                                   " matches the result; drop it, or use AutoAugment, RandAugment or "
                                   "TrivialAugmentWide, whose moves the " +
                                   follower + " repeats");
  }
  return built;
}

}  // namespace

Status add_fields(ArenaSpec& spec, const LoaderOptions& resolved, const DatasetIndex& index) {
  const std::vector<FieldSpec>& fields = index.fields();
  if (fields.empty()) return Status::Ok();
  spec.missing = resolved.missing;
  auto pipelines = image_pipelines(resolved);
  if (!pipelines.ok()) return pipelines.status();
  std::size_t image = 0;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    FieldDemand d;
    d.name = fields[f].name;
    d.kind = fields[f].kind;
    TransformSpec transform{};
    switch (fields[f].kind) {
      case FieldKind::kImage:
        if (Status s = plan_image(resolved, (*pipelines)[image++], pipelines->front(), d, transform); !s.ok())
          return s;
        break;
      case FieldKind::kMask: {
        auto built = plan_follower(resolved, fields, pipelines->front(), d);
        if (!built.ok()) return built.status();
        const auto size = static_cast<std::int64_t>(built->size());
        d.element = fields[f].element;
        d.fill = fields[f].fill;
        if (size == 0) {  // its image's size, each sample its own
          const std::uint64_t side = built->max_size();
          d.ragged = true;
          d.ragged_bytes = std::uint64_t{resolved.batch_size} * side * side * element_bytes(d.element);
          break;
        }
        d.shape = {size, size};
        break;
      }
      case FieldKind::kLabel: d.element = ElementType::kInt64; break;
      case FieldKind::kNumber: d.element = ElementType::kFloat64; break;
      case FieldKind::kArray: {
        // One dtype; dense when every member has one shape, else ragged, each sample's
        // shape its header's.
        const ArrayFieldShape& shape = index.array_shape(f);
        d.element = shape.dtype;
        d.ragged = shape.varies;
        d.shape = shape.shape;
        if (d.ragged) d.ragged_bytes = index.largest_batch_bytes(f, resolved.batch_size);
        break;
      }
      case FieldKind::kBoxes:
        if (auto built = plan_follower(resolved, fields, pipelines->front(), d); !built.ok())
          return built.status();
        [[fallthrough]];
      case FieldKind::kPerBox:
        // Ragged, [K, 4] float32 or [K] of the field's dtype, as many as its worst batch's
        // members could hold.
        d.element = fields[f].kind == FieldKind::kBoxes ? ElementType::kFloat32 : fields[f].element;
        d.key = fields[f].json_key;
        d.box_format = fields[f].box_format;
        d.normalized = fields[f].normalized;
        d.ragged = true;
        d.ragged_bytes =
            box_value_bound(d.kind, d.element, !d.key.empty(),
                            index.largest_batch_bytes(f, resolved.batch_size), resolved.batch_size);
        break;
      case FieldKind::kText:
      case FieldKind::kBytes:
        d.ragged = true;
        d.ragged_bytes = index.largest_batch_bytes(f, resolved.batch_size);
        break;
    }
    spec.fields.push_back(std::move(d));
    spec.field_columns.push_back(index.field_columns().of[f]);
    spec.field_transforms.push_back(transform);
  }
  // The samples' keys, last: text read from their tar headers, the worst batch all of the
  // longest key.
  FieldDemand keys;
  keys.name = kKeyField;
  keys.kind = FieldKind::kText;
  keys.ragged = true;
  keys.ragged_bytes = std::uint64_t{index.longest_key()} * resolved.batch_size;
  spec.fields.push_back(std::move(keys));
  spec.field_columns.push_back(FieldColumn{});
  spec.field_transforms.push_back(TransformSpec{});
  return Status::Ok();
}

}  // namespace forkfeed
