// SlotPool: the free batch slots (loader/slot_pool.h).
#include "loader/slot_pool.h"

namespace forkfeed {

SlotPool::SlotPool(std::uint32_t slots) {
  for (std::uint32_t s = slots; s > 0; --s) free_.push_back(s - 1);
}

std::optional<std::uint32_t> SlotPool::take() {
  std::lock_guard lock(mu_);
  if (free_.empty()) return std::nullopt;
  const std::uint32_t s = free_.back();
  free_.pop_back();
  return s;
}

void SlotPool::give_back(std::uint32_t slot) {
  std::lock_guard lock(mu_);
  free_.push_back(slot);
}

std::uint32_t SlotPool::free_count() const {
  std::lock_guard lock(mu_);
  return static_cast<std::uint32_t>(free_.size());
}

Status every_slot_held() {
  return Status::ResourceExhausted(
      "every batch slot is held by a Batch the caller has not released; release batches sooner or raise "
      "prefetch");
}

}  // namespace forkfeed
