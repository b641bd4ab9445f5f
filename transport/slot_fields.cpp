// SlotFields: placing a schema's fields in a slot, and checking a placement read from
// shared memory or the wire.
#include "transport/slot_fields.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace forkfeed {
namespace {

constexpr std::uint64_t kAlign = 64;
constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();

// a * b, or nullopt when it does not fit.
std::optional<std::uint64_t> times(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kMost / a) return std::nullopt;
  return a * b;
}

// Reserves `bytes` at `at` (aligned first), moving `at` past them; nullopt on overflow.
std::optional<std::uint64_t> take(std::uint64_t& at, std::optional<std::uint64_t> bytes) {
  if (!bytes || at > kMost - kAlign - *bytes) return std::nullopt;
  const std::uint64_t begin = (at + kAlign - 1) / kAlign * kAlign;
  at = begin + *bytes;
  return begin;
}

Status bad(const FieldDemand& d, const std::string& what) {
  return Status::InvalidArgument("field '" + d.name + "' " + what);
}

// Bytes of one sample of a dense field; nullopt on overflow.
std::optional<std::uint64_t> dense_bytes(const FieldDemand& d) {
  std::optional<std::uint64_t> bytes = element_bytes(d.element);
  for (const std::int64_t n : d.shape) {
    if (bytes) bytes = times(*bytes, static_cast<std::uint64_t>(n));
  }
  return bytes;
}

// Fills `r`'s offsets for `d` from `at` on, moving `at` past what it takes; false on overflow.
bool place_one(const FieldDemand& d, std::uint32_t batch, std::uint64_t& at, FieldRegion& r) {
  const auto present = take(at, batch);
  if (!present) return false;
  r.present = *present;
  if (!d.ragged) {
    const auto bytes = dense_bytes(d);
    const auto all = bytes ? times(*bytes, batch) : std::nullopt;
    if (!all) return false;
    r.sample_bytes = *bytes;
    r.capacity = *all;
    const auto values = d.fixed_at != 0 ? std::optional(d.fixed_at) : take(at, all);
    r.values = values.value_or(0);
    return values.has_value();
  }
  const auto offsets = take(at, times(batch + std::uint64_t{1}, sizeof(std::uint64_t)));
  const auto shapes = has_shapes(d.kind) ? take(at, times(batch, kShapeWords * sizeof(std::int64_t)))
                                         : std::optional<std::uint64_t>(0);
  const auto values = take(at, d.ragged_bytes);
  if (!offsets || !shapes || !values) return false;
  r.offsets = *offsets;
  r.shapes = *shapes;
  r.values = *values;
  r.capacity = d.ragged_bytes;
  return true;
}

// [at, at + bytes) inside [0, size).
bool inside(std::uint64_t at, std::uint64_t bytes, std::uint64_t size) {
  return at <= size && bytes <= size - at;
}

}  // namespace

std::string_view FieldRegion::field_name() const { return {name, ::strnlen(name, kFieldNameBytes)}; }

const FieldRegion* SlotFields::find(std::string_view name) const {
  const auto all = regions();
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const FieldRegion& r) { return r.field_name() == name; });
  return it == all.end() ? nullptr : &*it;
}

Result<SlotFields> SlotFields::place(std::span<const FieldDemand> demands, std::uint32_t batch_size,
                                     std::uint64_t start, std::uint64_t& end) {
  if (demands.size() > kMaxSlotFields) {
    return Status::InvalidArgument("a slot holds at most " + std::to_string(kMaxSlotFields) +
                                   " fields, not " + std::to_string(demands.size()));
  }
  SlotFields placed;
  std::uint64_t at = start;
  for (const FieldDemand& d : demands) {
    if (d.key.size() > kMaxBoxKeyBytes) {
      return bad(d, "has a key of " + std::to_string(d.key.size()) + " bytes; at most " +
                        std::to_string(kMaxBoxKeyBytes) + " are carried");
    }
    if (d.name.empty() || d.name.size() >= kFieldNameBytes) {
      return bad(d, "needs a name of 1 to " + std::to_string(kFieldNameBytes - 1) + " bytes");
    }
    if (!d.ragged && d.shape.size() > kMaxFieldRank) {
      return bad(d, "has " + std::to_string(d.shape.size()) + " dimensions; at most " +
                        std::to_string(kMaxFieldRank) + " are carried");
    }
    if (std::any_of(d.shape.begin(), d.shape.end(), [](std::int64_t n) { return n < 0; })) {
      return bad(d, "has a negative dimension");
    }
    FieldRegion& r = placed.fields[placed.count++];
    r = FieldRegion{};
    std::memcpy(r.name, d.name.data(), d.name.size());
    r.kind = d.kind;
    r.element = d.element;
    r.ragged = d.ragged ? 1 : 0;
    r.rank = static_cast<std::uint8_t>(d.ragged ? 0 : d.shape.size());
    r.fill = d.fill;
    r.box_format = d.box_format;
    r.normalized = d.normalized ? 1 : 0;
    std::memcpy(r.key, d.key.data(), d.key.size());
    std::copy(d.shape.begin(), d.shape.end(), r.shape);
    if (!place_one(d, batch_size, at, r)) return bad(d, "does not fit in a slot: its size overflows");
  }
  end = at;
  return placed;
}

bool SlotFields::fit(std::uint64_t slot_bytes, std::uint32_t batch_size) const {
  if (count > kMaxSlotFields) return false;
  for (const FieldRegion& r : regions()) {
    if (r.rank > kMaxFieldRank || !inside(r.present, batch_size, slot_bytes) ||
        !inside(r.values, r.capacity, slot_bytes)) {
      return false;
    }
    if (r.ragged == 0) {
      const auto all = times(r.sample_bytes, batch_size);
      if (!all || *all > r.capacity) return false;
      continue;
    }
    const auto offsets = times(batch_size + std::uint64_t{1}, sizeof(std::uint64_t));
    if (!offsets || !inside(r.offsets, *offsets, slot_bytes) || r.offsets % 8 != 0) return false;
    if (r.shapes != 0 && (!inside(r.shapes, batch_size * kShapeWords * sizeof(std::int64_t), slot_bytes) ||
                          r.shapes % 8 != 0)) {
      return false;
    }
  }
  return true;
}

bool SlotFields::written_fit(const std::byte* slot, std::uint32_t count) const {
  for (const FieldRegion& r : regions()) {
    if (r.ragged == 0) continue;
    const auto* offsets = reinterpret_cast<const std::uint64_t*>(slot + r.offsets);
    if (offsets[0] != 0) return false;
    for (std::uint32_t i = 0; i < count; ++i) {
      if (offsets[i + 1] < offsets[i] || offsets[i + 1] > r.capacity) return false;
    }
    if (r.shapes == 0) continue;
    const auto* shapes = reinterpret_cast<const std::int64_t*>(slot + r.shapes);
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::int64_t* words = shapes + std::size_t{i} * kShapeWords;
      const std::int64_t rank = words[0], element = words[1];
      if (rank < 0 || rank > static_cast<std::int64_t>(kMaxFieldRank)) return false;
      if (element < 0 || element > static_cast<std::int64_t>(ElementType::kFloat64)) return false;
      // Its shape is its bytes, so that a view of the shape reads only them.
      std::optional<std::uint64_t> bytes = element_bytes(static_cast<ElementType>(element));
      for (std::int64_t d = 0; d < rank && bytes; ++d) {
        bytes = words[2 + d] < 0 ? std::nullopt : times(*bytes, static_cast<std::uint64_t>(words[2 + d]));
      }
      if (bytes != offsets[i + 1] - offsets[i]) return false;
    }
  }
  return true;
}

}  // namespace forkfeed
