// WorkerPoolSeam: what only tests read of a WorkerPool::Impl (its friend), kept out of
// the pool's own interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "process/worker_pool.h"

namespace forkfeed {

class WorkerPoolSeam {
 public:
  // Messages worker `w`'s socket had no room for yet (it does not read: stopped, stuck).
  static std::size_t unsent(const WorkerPool::Impl& pool, std::uint32_t w) {
    std::lock_guard lock(pool.mu_);
    return pool.places_[w].backlog.size();
  }
};

}  // namespace forkfeed
