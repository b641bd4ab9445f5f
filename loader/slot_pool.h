// SlotPool: the batch slots not in use. Only the orchestrator's process takes and
// returns slots (a worker holds one only through a task), so the pool lives in
// ordinary memory; a mutex guards it because a Batch may be released on any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "forkfeed/status.h"
#include "transport/arena.h"
#include "transport/fork_copy.h"

namespace forkfeed {

class SlotPool {
 public:
  explicit SlotPool(std::uint32_t slots);
  std::optional<std::uint32_t> take();
  void give_back(std::uint32_t slot);
  std::uint32_t free_count() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::uint32_t> free_;
};

// What next() says when it would wait for a slot that only the caller can free: every
// slot is held by a Batch not yet released (for a Loader and a Client alike).
Status every_slot_held();

namespace detail {

// Holds one slot for a Batch: keeps the slot's memory mapped while the Batch lives and
// hands the slot back when destroyed. A Loader's batches use PoolSlotLease; a
// forkfeed::Client's return theirs to the daemon (ReturnLease, client/client_stream.h).
class SlotLease {
 public:
  SlotLease() = default;
  virtual ~SlotLease() = default;
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
};

// A Batch's hold on its slot: the lease, and the slot's memory registered for a private
// copy in any child of fork(). Let go of in that order of members, backwards: the
// registration first, so that no fork copies a slot already being filled again.
class HeldSlot {
 public:
  HeldSlot(std::unique_ptr<SlotLease> lease, std::span<const std::byte> memory)
      : lease_(std::move(lease)), copy_(memory) {}

 private:
  std::unique_ptr<SlotLease> lease_;
  ForkCopy copy_;
};

// Keeps the arena mapped, and returns the slot to its pool if the loader still exists.
class PoolSlotLease final : public SlotLease {
 public:
  PoolSlotLease(std::shared_ptr<Arena> arena, std::weak_ptr<SlotPool> pool, std::uint32_t slot)
      : arena_(std::move(arena)), pool_(std::move(pool)), slot_(slot) {}
  ~PoolSlotLease() override {
    if (auto pool = pool_.lock()) pool->give_back(slot_);
  }

 private:
  std::shared_ptr<Arena> arena_;
  std::weak_ptr<SlotPool> pool_;
  std::uint32_t slot_;
};

}  // namespace detail
}  // namespace forkfeed
