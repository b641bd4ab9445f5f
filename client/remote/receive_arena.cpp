// ReceiveArena: the memfd, its registration and its pinning.
#include "client/remote/receive_arena.h"

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace forkfeed {

Result<std::shared_ptr<ReceiveArena>> ReceiveArena::create(std::shared_ptr<UcxContext> context,
                                                           std::uint32_t slots, std::uint64_t slot_bytes,
                                                           int pin_device) {
  UniqueFd memfd(::memfd_create("forkfeed-remote-arena", MFD_CLOEXEC));
  if (!memfd.valid()) return Status::FromErrno("memfd_create for the remote stream's receive arena", errno);
  const std::uint64_t bytes = std::uint64_t{slots} * slot_bytes;
  if (::ftruncate(memfd.get(), static_cast<off_t>(bytes)) != 0) {
    return Status::FromErrno("sizing the receive arena to " + std::to_string(bytes) + " bytes", errno);
  }
  auto mapping = Mapping::map_shared(memfd.get(), bytes);
  if (!mapping.ok()) return mapping.status();
  auto window = SlotWindow::map(memfd.get(), bytes, true, {0, slot_bytes, slots, pin_device});
  if (!window.ok()) return window.status();
  if (pin_device >= 0) spdlog::info("{}", (*window)->pin_summary());
  auto memory = UcxMemory::map(std::move(context), mapping->data(), bytes, false);
  if (!memory.ok()) return memory.status();
  UniqueFd returned(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!returned.valid()) return Status::FromErrno("eventfd for the receive arena", errno);
  auto arena = std::shared_ptr<ReceiveArena>(
      new ReceiveArena(std::move(mapping).value(), std::move(window).value(), std::move(memory).value(),
                       std::move(returned), slots, slot_bytes));
  for (std::uint32_t i = slots; i-- > 0;) arena->free_.push_back(i);
  arena->credits_ = slots;
  return arena;
}

void ReceiveArena::give_back(std::uint32_t slot, bool was_held) {
  if (!owner_.here()) return;
  {
    std::lock_guard lock(mu_);
    free_.push_back(slot);
    credits_ += 1;
    if (was_held) held_.fetch_sub(1, std::memory_order_acq_rel);
  }
  const std::uint64_t one = 1;
  (void)!::write(returned_.get(), &one, sizeof one);
}

}  // namespace forkfeed
