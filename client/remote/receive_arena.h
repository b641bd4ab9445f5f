// ReceiveArena: a remote Client's receive slots — a memfd of this process, mapped twice:
// once registered with UCX, which receives into it, and once where batches are read (a
// SlotWindow, page-locked for CUDA when asked, in which a batch held while every slot is
// can be copied aside without moving what UCX writes into). A slot is free, on its way (a
// rendezvous into it), or lent (a Batch, or a delivery not yet taken); every slot freed is
// a credit owed to the gateway. Shared by a RemoteLink's UcxReceiver and the leases of the
// batches it handed out, so that a Batch stays readable after its Client is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/owner_process.h"
#include "base/unique_fd.h"
#include "forkfeed/status.h"
#include "remote/ucx.h"
#include "transport/mapping.h"
#include "transport/slot_window.h"

namespace forkfeed {

class ReceiveArena {
 public:
  // `slots` of `slot_bytes`; with `pin_device` >= 0 page-locked for that CUDA device.
  static Result<std::shared_ptr<ReceiveArena>> create(std::shared_ptr<UcxContext> context,
                                                      std::uint32_t slots, std::uint64_t slot_bytes,
                                                      int pin_device);
  // Where UCX receives slot i.
  std::byte* slot(std::uint32_t i) const { return mapping_.data() + std::uint64_t{i} * slot_bytes_; }
  // Where batches are read.
  const std::shared_ptr<SlotWindow>& window() const { return window_; }
  std::uint64_t slot_bytes() const { return slot_bytes_; }
  ucp_mem_h memh() const { return memory_.get(); }
  int returned_fd() const { return returned_.get(); }
  std::uint32_t held() const { return held_.load(std::memory_order_acquire); }
  bool pinned() const { return window_->pinned(); }
  void lent() { held_.fetch_add(1, std::memory_order_acq_rel); }
  std::uint32_t slots() const { return slots_; }
  std::uint32_t free_count() const {
    std::lock_guard lock(mu_);
    return static_cast<std::uint32_t>(free_.size());
  }

  // A free slot for an arriving batch; nullopt if the gateway sent more than its credits.
  std::optional<std::uint32_t> take() {
    std::lock_guard lock(mu_);
    if (free_.empty()) return std::nullopt;
    const std::uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  // Any thread; nothing in the child of a fork() (the slots are the parent's).
  void give_back(std::uint32_t slot, bool was_held);
  // The credits owed, now owed no more.
  std::uint32_t take_credits() {
    std::lock_guard lock(mu_);
    return std::exchange(credits_, 0);
  }

 private:
  ReceiveArena(Mapping mapping, std::shared_ptr<SlotWindow> window, UcxMemory memory, UniqueFd returned,
               std::uint32_t slots, std::uint64_t slot_bytes)
      : mapping_(std::move(mapping)),
        window_(std::move(window)),
        memory_(std::move(memory)),
        returned_(std::move(returned)),
        slots_(slots),
        slot_bytes_(slot_bytes) {}
  Mapping mapping_;
  std::shared_ptr<SlotWindow> window_;  // the Batches' (which hold it too)
  UcxMemory memory_;                    // unregistered before the mapping goes
  UniqueFd returned_;                   // readable: slots were given back (credits to send)
  const std::uint32_t slots_;
  const std::uint64_t slot_bytes_;
  mutable std::mutex mu_;
  std::vector<std::uint32_t> free_;
  std::uint32_t credits_ = 0;
  std::atomic<std::uint32_t> held_{0};
  OwnerProcess owner_;
};

}  // namespace forkfeed
