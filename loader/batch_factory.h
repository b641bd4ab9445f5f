// BatchFactory: makes the public Batch view of a finished slot.
#pragma once

#include <memory>

#include "forkfeed/batch.h"
#include "loader/slot_pool.h"
#include "transport/slot_fields.h"

namespace forkfeed {

class BatchFactory {
 public:
  // A view of `count` samples in `slot`, read where `place` (the slot's) says, or in the
  // arena's own mapping without one; the lease returns the slot when the Batch goes.
  static Batch make(const Arena& arena, std::uint32_t slot, std::uint32_t count, std::uint64_t epoch,
                    std::uint64_t index, std::unique_ptr<detail::SlotLease> lease,
                    detail::SlotPlace place = {});

  // A batch whose memory is resolved already, as a forkfeed::Client maps it: `count`
  // samples of `size` x `size` pixels in `dtype` and `layout`, `count` labels and sample
  // indices, all within `memory` (what a child of fork() copies; empty: nothing).
  struct Parts {
    const void* pixels;
    std::size_t bytes;
    DType dtype;
    std::uint32_t size;
    std::uint32_t count;
    const std::int64_t* labels;
    const std::uint64_t* sample_indices;
    std::uint64_t epoch;
    std::uint64_t index;
    Layout layout = Layout::kAuto;  // kAuto: dtype's default
    std::span<const std::byte> memory = {};
    detail::SlotPlace place = {};  // where `memory` is read, for copying it aside
  };
  static Batch make(const Parts& parts, std::unique_ptr<detail::SlotLease> lease);

  // Gives `batch` its fields: `fields` placed in the slot at `slot`, of which the first
  // batch.size() samples were written. `fields` is kept alive by the Batch (its names).
  // REQUIRES: fields->fit(the slot's bytes, its batch size), as its reader checked.
  static void add_fields(Batch& batch, const std::byte* slot, std::shared_ptr<const SlotFields> fields);
};

}  // namespace forkfeed
