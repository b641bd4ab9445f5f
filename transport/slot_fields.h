// SlotFields: where each field of a batch lies in a slot — the one rule for it, read alike
// by the orchestrator, the workers, a Client and the gateway. A slot is its header, the
// sample indices, the labels, the skip notes and the pixels (transport/arena_layout.h);
// the fields of a sample schema (forkfeed/fields.h) are regions of it: the first image
// field is the pixels and the first label field the labels, as without fields, and every
// other field has a region of its own after the pixels.
//
// A dense region holds batch_size samples of one shape back to back (images, labels,
// numbers, arrays of one shape). A ragged region holds the values of the samples back to
// back, sample i at [offsets[i], offsets[i+1]) of it, with as many bytes as the dataset's
// worst batch needs (text, bytes, arrays whose shape varies; those keep each sample's
// shape too). Samples are written in batch order and compacted as they are kept, so a
// ragged field is appended to at offsets[written].
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/fields.h"
#include "forkfeed/status.h"

namespace forkfeed {

inline constexpr std::size_t kMaxSlotFields = 17;  // 16 of a schema and the samples' keys
inline constexpr std::size_t kFieldNameBytes = 32;
inline constexpr std::size_t kMaxFieldRank = kMaxArrayRank;
// A ragged array's sample in its shapes: its rank, its ElementType (each sample's .npy
// says its own), then its dimensions.
inline constexpr std::size_t kShapeWords = 2 + kMaxFieldRank;
// The ragged bytes field that holds each sample's key, in every slot of a schema.
inline constexpr std::string_view kKeyField = "__key__";

// Whether a ragged field of `kind` keeps each sample's shape and dtype (arrays whose shape
// varies, boxes [K, 4], per-box values [K], images and masks of each their own size); text
// and bytes are their length.
inline bool has_shapes(FieldKind kind) { return kind != FieldKind::kText && kind != FieldKind::kBytes; }

// A field's region, as shared memory holds it: plain data, offsets from the slot's start.
struct FieldRegion {
  char name[kFieldNameBytes];  // NUL-terminated
  FieldKind kind;
  ElementType element;
  std::uint8_t ragged;                // 1: values back to back with offsets; 0: dense
  std::uint8_t rank;                  // dense: dimensions of one sample (0: a scalar)
  std::uint32_t fill;                 // a mask's FieldSpec::fill; 0 for other kinds
  BoxFormat box_format;               // boxes: FieldSpec::box_format
  std::uint8_t normalized;            // boxes: FieldSpec::normalized
  char key[kMaxBoxKeyBytes + 1];      // boxes, per_box of a .json member: FieldSpec::json_key, NUL-terminated
  std::int64_t shape[kMaxFieldRank];  // dense: one sample's shape
  std::uint64_t sample_bytes;         // dense: bytes of one sample
  std::uint64_t values;               // the values
  std::uint64_t capacity;             // bytes of the values region
  std::uint64_t offsets;              // ragged: batch_size + 1 uint64 byte offsets into the values
  std::uint64_t shapes;               // ragged arrays: batch_size x kShapeWords int64; else 0
  std::uint64_t present;              // batch_size bytes: 1 where the sample has the field

  std::string_view field_name() const;
  std::string_view json_key() const { return key; }
};

// What a field needs of a slot, before it is placed.
struct FieldDemand {
  std::string name;
  FieldKind kind = FieldKind::kBytes;
  ElementType element = ElementType::kUint8;
  bool ragged = false;
  std::vector<std::int64_t> shape;  // dense: one sample's shape
  std::uint64_t ragged_bytes = 0;   // ragged: what the worst batch's values take
  // Where a dense field lies when it is not placed after the pixels: the pixels' or the
  // labels' offset (the first image or label field); 0: placed.
  std::uint64_t fixed_at = 0;
  std::uint32_t fill = 0;  // a mask's FieldSpec::fill
  // Boxes and per_box: FieldSpec::json_key (at most kMaxBoxKeyBytes), ::box_format, ::normalized.
  std::string key = {};
  BoxFormat box_format = BoxFormat::kXyxy;
  bool normalized = false;
};

struct SlotFields {
  std::uint32_t count = 0;
  FieldRegion fields[kMaxSlotFields];

  std::span<const FieldRegion> regions() const { return {fields, count}; }
  // The region of field `name`; nullptr when the schema has none.
  const FieldRegion* find(std::string_view name) const;
  // Places `demands`, in order, from `start` (bytes from the slot's start) on, each region
  // 64-byte aligned, for slots of `batch_size` samples; `end` gets the first byte after
  // them. Errors name the field: too many, a name too long, a shape of too many
  // dimensions or with a negative one, sizes that overflow.
  static Result<SlotFields> place(std::span<const FieldDemand> demands, std::uint32_t batch_size,
                                  std::uint64_t start, std::uint64_t& end);
  // Whether every region lies inside a slot of `slot_bytes` and `batch_size` samples, as a
  // process that did not place them (a client, the gateway) must check before reading.
  bool fit(std::uint64_t slot_bytes, std::uint32_t batch_size) const;
  // Whether what the first `count` samples' ragged fields say of themselves in the slot
  // at `slot` (their offsets; their arrays' ranks, dtypes and shapes, each shape as many
  // bytes as the sample has) stays inside their regions, as a reader must check before it
  // gives them out. REQUIRES: fit() for the slot.
  bool written_fit(const std::byte* slot, std::uint32_t count) const;
};

}  // namespace forkfeed
