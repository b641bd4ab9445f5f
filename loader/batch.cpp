// Batch and its factory.
#include "forkfeed/batch.h"

#include <algorithm>

#include "loader/batch_factory.h"

namespace forkfeed {

Batch::Batch() = default;
Batch::Batch(Batch&&) noexcept = default;
Batch& Batch::operator=(Batch&&) noexcept = default;
Batch::~Batch() = default;

void Batch::release() { *this = Batch(); }

const FieldView* Batch::field(std::string_view name) const {
  for (const FieldView& f : fields_) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

std::span<const std::byte> FieldView::bytes(std::size_t i) const {
  if (!ragged()) return {values_ + i * sample_bytes_, sample_bytes_};
  return {values_ + offsets_[i], offsets_[i + 1] - offsets_[i]};
}

std::string_view FieldView::text(std::size_t i) const {
  const std::span<const std::byte> b = bytes(i);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

ElementType FieldView::element(std::size_t i) const {
  if (shapes_ == nullptr) return element_;
  return static_cast<ElementType>(shapes_[i * kShapeWords + 1]);  // checked: SlotFields::written_fit
}

std::span<const std::int64_t> FieldView::shape(std::size_t i) const {
  if (!ragged()) return sample_shape_;
  if (shapes_ == nullptr) return {};
  const std::int64_t* s = shapes_ + i * kShapeWords;
  return {s + 2, static_cast<std::size_t>(s[0])};  // its rank checked: SlotFields::written_fit
}

namespace {

std::array<std::int64_t, 4> shape_of(std::int64_t n, std::int64_t size, Layout layout) {
  if (layout == Layout::kNhwc) return {n, size, size, 3};
  return {n, 3, size, size};
}

}  // namespace

Batch BatchFactory::make(const Arena& arena, std::uint32_t slot, std::uint32_t count, std::uint64_t epoch,
                         std::uint64_t index, std::unique_ptr<detail::SlotLease> lease,
                         detail::SlotPlace place) {
  const ControlBlock& control = arena.control();
  const SlotView view =
      place.window != nullptr ? arena.slot(slot, place.window->origin(place.slot)) : arena.slot(slot);
  const auto n = static_cast<std::int64_t>(count);
  const auto s = static_cast<std::int64_t>(control.transform.size);
  Batch b;
  b.slot_ = std::make_unique<detail::HeldSlot>(
      std::move(lease), std::span(view.base, control.slots.slot_stride), std::move(place));
  b.data_ = view.pixels;
  b.bytes_ = count * control.slots.sample_bytes;
  b.dtype_ = control.transform.dtype;
  b.layout_ = resolve(control.transform.layout, b.dtype_);
  b.shape_ = shape_of(n, s, b.layout_);
  b.labels_ = {view.labels, count};
  b.sample_indices_ = {view.sample_indices, count};
  b.epoch_ = epoch;
  b.index_ = index;
  return b;
}

Batch BatchFactory::make(const Parts& parts, std::unique_ptr<detail::SlotLease> lease) {
  const auto n = static_cast<std::int64_t>(parts.count);
  const auto s = static_cast<std::int64_t>(parts.size);
  Batch b;
  b.slot_ = std::make_unique<detail::HeldSlot>(std::move(lease), parts.memory, parts.place);
  b.data_ = parts.pixels;
  b.bytes_ = parts.bytes;
  b.dtype_ = parts.dtype;
  b.layout_ = resolve(parts.layout, b.dtype_);
  b.shape_ = shape_of(n, s, b.layout_);
  b.labels_ = {parts.labels, parts.count};
  b.sample_indices_ = {parts.sample_indices, parts.count};
  b.epoch_ = parts.epoch;
  b.index_ = parts.index;
  return b;
}

void BatchFactory::add_fields(Batch& batch, const std::byte* slot, std::shared_ptr<const SlotFields> fields) {
  batch.fields_.clear();
  batch.fields_.reserve(fields->count);
  for (const FieldRegion& r : fields->regions()) {
    FieldView& f = batch.fields_.emplace_back();
    f.name_ = r.field_name();
    f.kind_ = r.kind;
    f.element_ = r.element;
    f.count_ = batch.size();
    f.values_ = slot + r.values;
    f.present_ = reinterpret_cast<const std::uint8_t*>(slot + r.present);
    if (r.ragged != 0) {
      f.offsets_ = reinterpret_cast<const std::uint64_t*>(slot + r.offsets);
      f.shapes_ = r.shapes != 0 ? reinterpret_cast<const std::int64_t*>(slot + r.shapes) : nullptr;
    } else {
      f.sample_bytes_ = r.sample_bytes;
      f.sample_shape_ = {r.shape, r.rank};
    }
  }
  batch.names_ = std::move(fields);
}

}  // namespace forkfeed
