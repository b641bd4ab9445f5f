// Batch: a view of one finished batch, read in place in the loader's shared memory.
// The batch's slot goes back to the pool when the Batch is released or destroyed.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "forkfeed/options.h"

namespace forkfeed {

namespace detail {
class SlotLease;  // owns a slot until destroyed; see loader/slot_pool.h
}

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
  bool empty() const { return lease_ == nullptr; }

  std::span<const std::int64_t> labels() const { return labels_; }
  // Dataset index of each sample, in batch order.
  std::span<const std::uint64_t> sample_indices() const { return sample_indices_; }
  std::uint64_t epoch() const { return epoch_; }
  // Position of this batch in its pass: 0, 1, 2, ...
  std::uint64_t index() const { return index_; }

  // Returns the slot to the loader now. The Batch becomes empty.
  void release();

 private:
  friend class BatchFactory;
  std::unique_ptr<detail::SlotLease> lease_;
  const void* data_ = nullptr;
  std::size_t bytes_ = 0;
  DType dtype_ = DType::kUint8;
  Layout layout_ = Layout::kNhwc;
  std::array<std::int64_t, 4> shape_{};
  std::span<const std::int64_t> labels_;
  std::span<const std::uint64_t> sample_indices_;
  std::uint64_t epoch_ = 0;
  std::uint64_t index_ = 0;
};

}  // namespace forkfeed
