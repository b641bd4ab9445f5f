// HeldBatches and the HeldSlots it lists: a hold joins the list when its Batch is made and
// leaves it when the Batch goes, or when it is copied aside.
#include "loader/held_batches.h"

#include "loader/slot_pool.h"

namespace forkfeed {

void HeldBatches::add(detail::HeldSlot* hold) {
  std::lock_guard lock(mu_);
  hold->older_ = newest_;
  (newest_ != nullptr ? newest_->newer_ : oldest_) = hold;
  newest_ = hold;
}

void HeldBatches::remove(detail::HeldSlot* hold) {
  std::lock_guard lock(mu_);
  if (hold->older_ == nullptr && oldest_ != hold) return;  // not listed: copied aside already
  (hold->older_ != nullptr ? hold->older_->newer_ : oldest_) = hold->newer_;
  (hold->newer_ != nullptr ? hold->newer_->older_ : newest_) = hold->older_;
  hold->older_ = hold->newer_ = nullptr;
}

Result<bool> HeldBatches::copy_oldest_aside(std::size_t count) {
  std::lock_guard lock(mu_);  // a Batch released meanwhile waits in remove()
  for (std::size_t n = 0; n < count; ++n) {
    detail::HeldSlot* hold = oldest_;
    if (hold == nullptr) return n > 0;
    Result<std::uint64_t> copied = hold->copy_aside();
    if (!copied.ok()) {
      if (n > 0) return true;  // the slots freed already let the pass go on
      return copied.status();
    }
    oldest_ = hold->newer_;
    (oldest_ != nullptr ? oldest_->older_ : newest_) = nullptr;
    hold->newer_ = nullptr;
    note_copy(*copied);
  }
  return true;
}

void HeldBatches::note_copy(std::uint64_t bytes) {
  if (copied_batches_++ == 0) {
    log_->warn(
        "every batch slot of this {} was held by a batch not yet released, so the oldest ({:.1f} MiB) was "
        "copied "
        "into private memory and its slot went back to the pass; batches are read in place, without a copy, "
        "while fewer are held: release them sooner (copy what you keep, tensor.clone()), or raise prefetch. "
        "Told once; stats() counts them (copied_batches)",
        what_, static_cast<double>(bytes) / 1048576.0);
  }
  copied_bytes_ += bytes;
}

std::uint64_t HeldBatches::copied_batches() const {
  std::lock_guard lock(mu_);
  return copied_batches_;
}

std::uint64_t HeldBatches::copied_bytes() const {
  std::lock_guard lock(mu_);
  return copied_bytes_;
}

namespace detail {

HeldSlot::HeldSlot(std::unique_ptr<SlotLease> lease, std::span<const std::byte> memory, SlotPlace place)
    : lease_(std::move(lease)), fork_copy_(memory), memory_(memory), place_(std::move(place)) {
  if (place_.holds != nullptr && place_.window != nullptr) place_.holds->add(this);
}

HeldSlot::~HeldSlot() {
  if (place_.holds != nullptr && place_.window != nullptr) place_.holds->remove(this);
}

Result<std::uint64_t> HeldSlot::copy_aside() {
  auto copy = place_.window->copy_aside(place_.slot, place_.bytes, memory_);
  if (!copy.ok()) return copy.status();
  copy_.emplace(std::move(copy).value());
  lease_.reset();  // the slot goes back: the batch is read from the copy now
  return memory_.size();
}

}  // namespace detail
}  // namespace forkfeed
