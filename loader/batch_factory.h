// BatchFactory: makes the public Batch view of a finished slot.
#pragma once

#include "forkfeed/batch.h"
#include "loader/slot_pool.h"

namespace forkfeed {

class BatchFactory {
 public:
  // A view of `count` samples in `slot`; the lease returns the slot when the Batch goes.
  static Batch make(const Arena& arena, std::uint32_t slot, std::uint32_t count, std::uint64_t epoch,
                    std::uint64_t index, std::unique_ptr<detail::SlotLease> lease);
};

}  // namespace forkfeed
