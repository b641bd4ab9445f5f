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

namespace {

std::array<std::int64_t, 4> shape_of(std::int64_t n, std::int64_t size, Layout layout) {
  if (layout == Layout::kNhwc) return {n, size, size, 3};
  return {n, 3, size, size};
}

}  // namespace

Batch BatchFactory::make(const Arena& arena, std::uint32_t slot, std::uint32_t count, std::uint64_t epoch,
                         std::uint64_t index, std::unique_ptr<detail::SlotLease> lease) {
  const ControlBlock& control = arena.control();
  const SlotView view = arena.slot(slot);
  const auto n = static_cast<std::int64_t>(count);
  const auto s = static_cast<std::int64_t>(control.transform.size);
  Batch b;
  b.lease_ = std::move(lease);
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
  b.lease_ = std::move(lease);
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

}  // namespace forkfeed
