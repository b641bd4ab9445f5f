// Batch: a view of one finished batch, read in place in the loader's shared memory.
// The batch's slot goes back to the pool when the Batch is released or destroyed. A
// child of fork() gets its own copy of every Batch held at the fork, as it was then.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "forkfeed/fields.h"
#include "forkfeed/options.h"

namespace forkfeed {

namespace detail {
class HeldSlot;  // owns a slot until destroyed; see loader/slot_pool.h
}

// One field of a batch, read in place like the rest of it; valid while its Batch is.
// Dense fields (images, labels, numbers, arrays of one shape) hold size() samples of
// sample_shape() back to back at data(); ragged ones (text, bytes, arrays whose shape
// varies, the samples' keys) hold sample i's bytes at bytes(i), and an array's shape at
// shape(i).
class FieldView {
 public:
  std::string_view name() const { return name_; }
  FieldKind kind() const { return kind_; }
  // The type of its elements: an array field has one, whatever its samples' shapes.
  ElementType element() const { return element_; }
  ElementType element(std::size_t i) const;
  bool ragged() const { return offsets_ != nullptr; }
  std::size_t size() const { return count_; }

  // Dense: the values of every sample. REQUIRES: !ragged()
  const void* data() const { return values_; }
  std::span<const std::int64_t> sample_shape() const { return sample_shape_; }
  std::size_t sample_bytes() const { return sample_bytes_; }

  // Sample i's bytes: its slice of data() when dense. REQUIRES: i < size()
  std::span<const std::byte> bytes(std::size_t i) const;
  // The same as text (a text field's bytes are valid UTF-8).
  std::string_view text(std::size_t i) const;
  // Sample i's shape: sample_shape() when dense, its own for a ragged array; empty for
  // text and bytes (bytes(i).size() is their length).
  std::span<const std::int64_t> shape(std::size_t i) const;
  // False where the sample lacked the field (MissingField::kEmpty): its value is empty
  // (a label -1, a number NaN, zeros in a dense array or image).
  bool present(std::size_t i) const { return present_[i] != 0; }
  // The same for every sample: one byte each, 1 where present.
  std::span<const std::uint8_t> present_flags() const { return {present_, count_}; }

 private:
  friend class BatchFactory;
  std::string_view name_;
  FieldKind kind_ = FieldKind::kBytes;
  ElementType element_ = ElementType::kUint8;
  std::size_t count_ = 0;
  const std::byte* values_ = nullptr;
  std::size_t sample_bytes_ = 0;
  std::span<const std::int64_t> sample_shape_;
  const std::uint64_t* offsets_ = nullptr;  // ragged: count + 1 byte offsets into values_
  const std::int64_t* shapes_ = nullptr;    // ragged arrays: per sample, its rank then its dimensions
  const std::uint8_t* present_ = nullptr;
};

class Batch {
 public:
  Batch();
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  ~Batch();

  // Pixels of all samples, contiguous. REQUIRES: !empty()
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  DType dtype() const { return dtype_; }
  // Layout::kNhwc or Layout::kNchw (LoaderOptions::layout, auto resolved by dtype).
  Layout layout() const { return layout_; }
  // {N, H, W, 3} for NHWC, {N, 3, H, W} for NCHW.
  std::array<std::int64_t, 4> shape() const { return shape_; }
  // Number of samples.
  std::size_t size() const { return labels_.size(); }
  bool empty() const { return slot_ == nullptr; }

  std::span<const std::int64_t> labels() const { return labels_; }
  // Dataset index of each sample, in batch order.
  std::span<const std::uint64_t> sample_indices() const { return sample_indices_; }
  std::uint64_t epoch() const { return epoch_; }
  // Position of this batch in its pass: 0, 1, 2, ...
  std::uint64_t index() const { return index_; }

  // The batch's fields, in the schema's order, the samples' keys ("__key__") last; empty
  // without a schema (LoaderOptions::fields). data() and labels() are then the first
  // image and label field's.
  std::span<const FieldView> fields() const { return fields_; }
  // The field called `name`; nullptr when there is none.
  const FieldView* field(std::string_view name) const;

  // Returns the slot to the loader now. The Batch becomes empty.
  void release();

 private:
  friend class BatchFactory;
  std::unique_ptr<detail::HeldSlot> slot_;
  const void* data_ = nullptr;
  std::size_t bytes_ = 0;
  DType dtype_ = DType::kUint8;
  Layout layout_ = Layout::kNhwc;
  std::array<std::int64_t, 4> shape_{};
  std::span<const std::int64_t> labels_;
  std::span<const std::uint64_t> sample_indices_;
  std::uint64_t epoch_ = 0;
  std::uint64_t index_ = 0;
  std::vector<FieldView> fields_;
  std::shared_ptr<const void> names_;  // what the fields' names view
};

}  // namespace forkfeed
