// The arena a plan lays out for its index (plan/arena_plan.h).
#include "plan/arena_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "plan/slot_count.h"
#include "workers/box_values.h"

namespace forkfeed {
namespace {

// An image field's region: dense at the size its transform makes, else ragged, room for
// the largest.
void plan_image_region(const ImagePlan& image, std::uint32_t batch_size, FieldDemand& d) {
  const TransformSpec& t = image.transform;
  d.element = t.dtype == DType::kUint8 ? ElementType::kUint8 : ElementType::kFloat32;
  if (t.size == 0) {  // each sample its own size: ragged, room for the largest
    d.ragged = true;
    d.ragged_bytes = std::uint64_t{batch_size} * sample_bytes(t.dtype, t.max_size);
    return;
  }
  const auto s = static_cast<std::int64_t>(t.size);
  d.shape =
      t.layout == Layout::kNhwc ? std::vector<std::int64_t>{s, s, 3} : std::vector<std::int64_t>{3, s, s};
}

// A field that follows the first image field's geometry (a mask or boxes): its pipeline's
// every op must say what it does to where pixels are (Pipeline::unrepeatable).
Status check_follower(const ImagePlan& image, const FieldDemand& d) {
  if (image.unrepeatable.empty()) return Status::Ok();
  const std::string follower = d.kind == FieldKind::kMask ? "mask" : "boxes";
  return Status::InvalidArgument("transform op " + image.unrepeatable + " of image field '" + image.field +
                                 "' has no rule for " + follower + " field '" + d.name +
                                 "': it blends copies of the image moved in different ways, so no " +
                                 follower +
                                 " matches the result; drop it, or use AutoAugment, RandAugment or "
                                 "TrivialAugmentWide, whose moves the " +
                                 follower + " repeats");
}

// A mask's region: its image's size, or ragged (each sample its own, at most max_size a side).
void plan_mask_region(const ImagePlan& image, const FieldSpec& f, std::uint32_t batch_size, FieldDemand& d) {
  d.element = f.element;
  d.fill = f.fill;
  const auto size = static_cast<std::int64_t>(image.transform.size);
  if (size == 0) {
    const std::uint64_t side = image.transform.max_size;
    d.ragged = true;
    d.ragged_bytes = std::uint64_t{batch_size} * side * side * element_bytes(d.element);
    return;
  }
  d.shape = {size, size};
}

// Boxes and their per_box values: ragged, [K, 4] float32 or [K] of the field's dtype, as
// many as its worst batch's members could hold.
void plan_box_region(const DatasetIndex& index, std::size_t f, std::uint32_t batch_size, FieldDemand& d) {
  const FieldSpec& spec = index.fields()[f];
  d.element = spec.kind == FieldKind::kBoxes ? ElementType::kFloat32 : spec.element;
  d.key = spec.json_key;
  d.box_format = spec.box_format;
  d.normalized = spec.normalized;
  d.ragged = true;
  d.ragged_bytes = box_value_bound(d.kind, d.element, !d.key.empty(),
                                   index.largest_batch_bytes(f, batch_size), batch_size);
}

// Field `f` of `index`'s region, and its transform when it is an image.
Status plan_field(const StreamPlan& plan, const DatasetIndex& index, std::size_t f, FieldDemand& d,
                  TransformSpec& transform) {
  const FieldSpec& spec = index.fields()[f];
  const std::uint32_t batch_size = plan->batch_size;
  d.name = spec.name;
  d.kind = spec.kind;
  const ImagePlan& first = plan.images().front();
  switch (spec.kind) {
    case FieldKind::kImage: {
      const auto image = std::find_if(plan.images().begin(), plan.images().end(),
                                      [&](const ImagePlan& i) { return i.field == spec.name; });
      if (image == plan.images().end()) {
        return Status::Internal("image field '" + spec.name + "' of the index has no transform in the plan");
      }
      plan_image_region(*image, batch_size, d);
      transform = image->transform;
      return Status::Ok();
    }
    case FieldKind::kMask:
      if (Status s = check_follower(first, d); !s.ok()) return s;
      plan_mask_region(first, spec, batch_size, d);
      return Status::Ok();
    case FieldKind::kLabel: d.element = ElementType::kInt64; return Status::Ok();
    case FieldKind::kNumber: d.element = ElementType::kFloat64; return Status::Ok();
    case FieldKind::kArray: {
      // One dtype; dense when every member has one shape, else ragged, each sample's
      // shape its header's.
      const ArrayFieldShape& shape = index.array_shape(f);
      d.element = shape.dtype;
      d.ragged = shape.varies;
      d.shape = shape.shape;
      if (d.ragged) d.ragged_bytes = index.largest_batch_bytes(f, batch_size);
      return Status::Ok();
    }
    case FieldKind::kBoxes:
      if (Status s = check_follower(first, d); !s.ok()) return s;
      plan_box_region(index, f, batch_size, d);
      return Status::Ok();
    case FieldKind::kPerBox: plan_box_region(index, f, batch_size, d); return Status::Ok();
    case FieldKind::kText:
    case FieldKind::kBytes:
      d.ragged = true;
      d.ragged_bytes = index.largest_batch_bytes(f, batch_size);
      return Status::Ok();
  }
  return Status::Internal("field '" + spec.name + "' of an unknown kind");
}

}  // namespace

Result<ArenaSpec> arena_spec(const StreamPlan& plan, const DatasetIndex& index, std::uint32_t pool_workers) {
  const LoaderOptions& o = plan.options();
  ArenaSpec spec{.num_workers = pool_workers,
                 .num_slots = slot_count(o),
                 .batch_size = o.batch_size,
                 .sample_bytes = sample_bytes(o.dtype, o.size),
                 .transform = plan.transform(),
                 .on_error = o.on_error,
                 .weight = o.weight};
  const std::vector<FieldSpec>& fields = index.fields();
  if (fields.empty()) return spec;
  spec.missing = o.missing;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    FieldDemand d;
    TransformSpec transform{};
    if (Status s = plan_field(plan, index, f, d, transform); !s.ok()) return s;
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
  keys.ragged_bytes = std::uint64_t{index.longest_key()} * o.batch_size;
  spec.fields.push_back(std::move(keys));
  spec.field_columns.push_back(FieldColumn{});
  spec.field_transforms.push_back(TransformSpec{});
  return spec;
}

}  // namespace forkfeed
