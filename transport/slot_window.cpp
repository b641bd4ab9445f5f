// SlotWindow: the window's mappings, a slot's move and the copy it leaves behind.
//
// Addresses are never handed back to the system while the window lives: a copy given back
// becomes a reservation (PROT_NONE, no memory), which the next slot that moves takes, so
// that no other mapping of the process can land inside the window's ranges, and the
// number of mappings stays that of the slots and the copies alive.
#include "transport/slot_window.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace forkfeed {
namespace {

// mremap and munmap by their system calls: a library that hooks them (UCX's, once a remote
// Client loaded it) may drop mremap's fifth argument, the address (transport/fork_copy.cpp).
bool move_onto(void* from, std::uint64_t bytes, void* to) {
  const long moved = ::syscall(SYS_mremap, from, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  return moved == reinterpret_cast<long>(to);
}

// Addresses kept and no memory: what a range of the window is between its uses.
void reserve(void* at, std::uint64_t bytes) {
  (void)::mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

Status no_room(const std::string& what, int err) {
  return Status::ResourceExhausted(Status::FromErrno(what, err).message());
}

}  // namespace

Result<std::shared_ptr<SlotWindow>> SlotWindow::map(int fd, std::uint64_t size, bool writable,
                                                    PinnedSlots pinned) {
  UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!own.valid()) return Status::FromErrno("dup of the batch slots' memfd", errno);
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* at = ::mmap(nullptr, size, prot, MAP_SHARED | MAP_POPULATE, own.get(), 0);
  if (at == MAP_FAILED) return Status::FromErrno("mmap of the batch slots", errno);
  std::shared_ptr<SlotWindow> window(
      new SlotWindow(std::move(own), static_cast<std::byte*>(at), size, writable));
  if (pinned.device >= 0 && pinned.count > 0) {
    window->pin_device_ = pinned.device;
    for (std::uint32_t i = 0; i < pinned.count; ++i) {
      const std::uint64_t slot = pinned.offset + std::uint64_t{i} * pinned.stride;
      window->pins_.push_back(
          {slot, PinnedRegistration::pin({window->data_ + slot, pinned.stride}, pinned.device)});
      if (!window->pins_.back().registration->pinned()) {  // the first failure says why for all
        window->pin_summary_ = window->pins_.back().registration->summary();
        window->pins_.clear();
        break;
      }
    }
    if (!window->pins_.empty()) {
      window->pin_summary_ = std::to_string(pinned.count) +
                             " batch slots: " + window->pins_.front().registration->summary() + ", each";
    }
  }
  return window;
}

SlotWindow::~SlotWindow() {
  pins_.clear();  // before their pages go
  ::munmap(data_, size_);
  for (const auto& [at, bytes] : own_) ::munmap(at, bytes);
}

const std::byte* SlotWindow::origin(std::uint64_t slot) const {
  std::lock_guard lock(mu_);
  return origin_locked(slot);
}

const std::byte* SlotWindow::origin_locked(std::uint64_t slot) const {
  for (const Moved& m : moved_) {
    if (m.slot == slot) return m.at - slot;
  }
  return data_;
}

bool SlotWindow::pinned() const {
  std::lock_guard lock(mu_);
  return !pins_.empty() &&
         std::all_of(pins_.begin(), pins_.end(), [](const Pin& p) { return p.registration->pinned(); });
}

std::string SlotWindow::pin_summary() const {
  std::lock_guard lock(mu_);
  return pin_summary_;
}

Result<std::byte*> SlotWindow::place(std::uint64_t bytes) {
  const auto spare =
      std::find_if(spare_.begin(), spare_.end(), [&](const auto& s) { return s.second == bytes; });
  if (spare != spare_.end()) {
    std::byte* at = spare->first;
    spare_.erase(spare);
    return at;
  }
  void* at = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (at == MAP_FAILED) return no_room("reserving addresses for a batch slot's new place", errno);
  own_.emplace_back(static_cast<std::byte*>(at), bytes);
  return static_cast<std::byte*>(at);
}

Result<SlotWindow::Copy> SlotWindow::copy_aside(std::uint64_t slot, std::uint64_t bytes,
                                                std::span<const std::byte> used) {
  std::lock_guard lock(mu_);
  std::byte* const here = const_cast<std::byte*>(origin_locked(slot)) + slot;
  auto there = place(bytes);
  if (!there.ok()) return there.status();
  void* copy = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) {
    spare_.emplace_back(*there, bytes);
    return no_room("mmap for a copy of a held batch (" + std::to_string(bytes) + " bytes)", errno);
  }
  std::memcpy(static_cast<std::byte*>(copy) + (used.data() - here), used.data(), used.size());
  const int prot = writable_ ? PROT_READ | PROT_WRITE : PROT_READ;
  void* mapped =
      ::mmap(*there, bytes, prot, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd_.get(), static_cast<off_t>(slot));
  if (mapped == MAP_FAILED) {
    const int err = errno;
    reserve(*there, bytes);
    spare_.emplace_back(*there, bytes);
    ::munmap(copy, bytes);
    return no_room("mmap of a batch slot's new place", err);
  }
  // The registration names the pages it locked: the ones the next batch is written into.
  const auto pin = std::find_if(pins_.begin(), pins_.end(), [&](const Pin& p) { return p.slot == slot; });
  if (pin != pins_.end()) pin->registration.reset();
  if (!move_onto(copy, bytes, here)) {  // cannot fail for a mapping this size; if it does, nothing moved
    const int err = errno;
    ::munmap(copy, bytes);
    if (pin != pins_.end()) pin->registration = PinnedRegistration::pin({here, bytes}, pin_device_);
    reserve(*there, bytes);
    spare_.emplace_back(*there, bytes);
    return no_room("moving a copy of a held batch into place", err);
  }
  if (pin != pins_.end()) pin->registration = PinnedRegistration::pin({*there, bytes}, pin_device_);
  const auto moved =
      std::find_if(moved_.begin(), moved_.end(), [&](const Moved& m) { return m.slot == slot; });
  if (moved != moved_.end()) {
    moved->at = *there;
  } else {
    moved_.push_back({slot, *there});
  }
  return Copy(shared_from_this(), here, bytes);
}

void SlotWindow::release(std::byte* at, std::uint64_t bytes) {
  reserve(at, bytes);
  std::lock_guard lock(mu_);
  spare_.emplace_back(at, bytes);
}

SlotWindow::Copy::Copy(Copy&& other) noexcept
    : window_(std::move(other.window_)), at_(std::exchange(other.at_, nullptr)), bytes_(other.bytes_) {}

SlotWindow::Copy::~Copy() {
  if (window_ != nullptr && at_ != nullptr) window_->release(at_, bytes_);
}

}  // namespace forkfeed
