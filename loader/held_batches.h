// HeldBatches: the batches a Loader or a Client handed out and has not had back, oldest
// first, and what it does when they hold every slot: it copies the oldest aside
// (transport/slot_window.h), so that its slot goes back to the pass. The one place that
// decides which batch is copied, counts the copies and warns of them, once.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "forkfeed/status.h"

namespace forkfeed {

namespace detail {
class HeldSlot;
}

class HeldBatches {
 public:
  // `log` warns of the first copy; `what` names the face in it ("loader", "client").
  HeldBatches(std::shared_ptr<spdlog::logger> log, std::string what)
      : log_(std::move(log)), what_(std::move(what)) {}

  // Copies the oldest `count` batches held and not yet copied aside (fewer when fewer are)
  // into private memory and gives their slots back: true when one was at least, false when
  // every held batch is a copy already (or none is held). ResourceExhausted when there is
  // no memory for the first copy. A caller that holds every slot copies as many as its
  // workers (or fewer batches the pass still needs): one slot freed at a time would keep
  // one worker busy, its prefetch lost.
  Result<bool> copy_oldest_aside(std::size_t count = 1);

  // How many batches were copied aside, and their bytes (LoaderStats::copied_batches).
  std::uint64_t copied_batches() const;
  std::uint64_t copied_bytes() const;

 private:
  friend class detail::HeldSlot;
  void add(detail::HeldSlot* hold);
  void remove(detail::HeldSlot* hold);
  // Counts a copy of `bytes`, and warns of the first. REQUIRES: mu_ held.
  void note_copy(std::uint64_t bytes);

  const std::shared_ptr<spdlog::logger> log_;
  const std::string what_;
  mutable std::mutex mu_;
  detail::HeldSlot* oldest_ = nullptr;  // a list of the holds in the order handed out
  detail::HeldSlot* newest_ = nullptr;
  std::uint64_t copied_batches_ = 0, copied_bytes_ = 0;
};

}  // namespace forkfeed
