// SlotWindow: where this process reads batches — a mapping of its own of a memfd's batch
// slots, in which a slot can move. Zero copies are the rule: a Batch is a view of its slot.
// But a trainer that keeps its batches (list(loader), a validation metric's outputs) holds
// every slot, and the pass would stop; instead the oldest held batch is copied aside: its
// pages become a private copy at the same addresses, so that every pointer and tensor into
// it stays valid, and its slot, free for the pass again, is mapped anew elsewhere in the
// window, where the next batch written into it is read.
//
// Page-locked for CUDA slot by slot, when asked: a registration names the pages it locked,
// so a slot copied aside is unpinned first (its batch is ordinary memory then) and pinned
// again at its new place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "forkfeed/status.h"
#include "transport/pinned_memory.h"

namespace forkfeed {

// The slots of a SlotWindow to page-lock: `count` of `stride` bytes from byte `offset`,
// page aligned.
struct PinnedSlots {
  std::uint64_t offset = 0;
  std::uint64_t stride = 0;
  std::uint32_t count = 0;
  int device = -1;  // the CUDA device; -1: none are pinned
};

class SlotWindow : public std::enable_shared_from_this<SlotWindow> {
 public:
  // Maps the first `size` bytes of `fd` (a dup of it is kept, to map slots anew) read-only,
  // or read-write when `writable`, and pins `pinned`.
  static Result<std::shared_ptr<SlotWindow>> map(int fd, std::uint64_t size, bool writable,
                                                 PinnedSlots pinned = {});
  ~SlotWindow();
  SlotWindow(const SlotWindow&) = delete;
  SlotWindow& operator=(const SlotWindow&) = delete;

  // Where the slot beginning at byte `slot` of the memfd is read now: byte k of the memfd
  // within that slot is at origin(slot) + k. Any thread.
  const std::byte* origin(std::uint64_t slot) const;
  // The window as mapped first: origin() of every slot that never moved.
  const std::byte* data() const { return data_; }
  std::uint64_t size() const { return size_; }
  // Whether every slot asked for is page-locked now, and one line for the log.
  bool pinned() const;
  std::string pin_summary() const;

  // The private copy of a batch copied aside. Destroying it gives its pages back; its
  // addresses stay the window's (reserved), for a slot's next place.
  class Copy {
   public:
    Copy(Copy&& other) noexcept;
    Copy& operator=(Copy&&) = delete;
    ~Copy();

   private:
    friend class SlotWindow;
    Copy(std::shared_ptr<SlotWindow> window, std::byte* at, std::uint64_t bytes)
        : window_(std::move(window)), at_(at), bytes_(bytes) {}
    std::shared_ptr<SlotWindow> window_;
    std::byte* at_;
    std::uint64_t bytes_;
  };

  // Copies `used` (bytes of the slot at `slot`, `bytes` long and page aligned, where it
  // is read now) into private pages at the same addresses, and maps the slot anew:
  // origin(slot) changes. ResourceExhausted without the memory or the mappings for it,
  // leaving the slot where it was. REQUIRES: the slot's bytes are within the window.
  Result<Copy> copy_aside(std::uint64_t slot, std::uint64_t bytes, std::span<const std::byte> used);

 private:
  SlotWindow(UniqueFd fd, std::byte* data, std::uint64_t size, bool writable)
      : fd_(std::move(fd)), data_(data), size_(size), writable_(writable) {}
  const std::byte* origin_locked(std::uint64_t slot) const;  // REQUIRES: mu_ held
  // Gives back the pages of a copy, keeping its addresses for a slot's next place.
  void release(std::byte* at, std::uint64_t bytes);
  // A place of `bytes` for a slot: a spare one, or new addresses.
  Result<std::byte*> place(std::uint64_t bytes);

  const UniqueFd fd_;
  std::byte* const data_;
  const std::uint64_t size_;
  const bool writable_;
  int pin_device_ = -1;
  mutable std::mutex mu_;
  struct Moved {
    std::uint64_t slot;
    std::byte* at;
  };
  std::vector<Moved> moved_;                                 // slots read elsewhere than in data_, and where
  std::vector<std::pair<std::byte*, std::uint64_t>> own_;    // mapped beyond data_: unmapped last
  std::vector<std::pair<std::byte*, std::uint64_t>> spare_;  // reserved, for a slot's next place
  struct Pin {
    std::uint64_t slot;
    std::optional<PinnedRegistration> registration;
  };
  std::vector<Pin> pins_;  // by slot, while pinned
  std::string pin_summary_;
};

}  // namespace forkfeed
