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
#include "transport/slot_window.h"

namespace forkfeed {

class HeldBatches;

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

// Where a held batch's slot is read, to copy the batch aside (transport/slot_window.h):
// the window, the slot's first byte in its memfd and its bytes, and the holds of the
// Loader or Client that handed it out. Without holds a batch is never copied: forkfeedd's
// and forkfeed-gateway's batches are another process's to read.
struct SlotPlace {
  std::shared_ptr<SlotWindow> window;
  std::uint64_t slot = 0;
  std::uint64_t bytes = 0;
  std::shared_ptr<HeldBatches> holds;
};

// A Batch's hold on its slot: the lease (or, once the batch was copied aside, the copy),
// and the batch's memory registered for a private copy in any child of fork(). Let go of
// in that order of members, backwards: the registration first, so that no fork copies a
// slot already being filled again; before them, its place among its holds.
class HeldSlot {
 public:
  // `memory`: the batch's bytes, within its slot's as `place` says, when it has one.
  HeldSlot(std::unique_ptr<SlotLease> lease, std::span<const std::byte> memory, SlotPlace place = {});
  ~HeldSlot();
  HeldSlot(const HeldSlot&) = delete;
  HeldSlot& operator=(const HeldSlot&) = delete;

 private:
  friend class forkfeed::HeldBatches;
  // Copies the batch aside and lets go of its slot; the bytes copied. Called by its holds,
  // under their lock.
  Result<std::uint64_t> copy_aside();

  std::unique_ptr<SlotLease> lease_;
  std::optional<SlotWindow::Copy> copy_;
  ForkCopy fork_copy_;
  std::span<const std::byte> memory_;
  SlotPlace place_;
  HeldSlot* older_ = nullptr;  // the holds' list
  HeldSlot* newer_ = nullptr;
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
