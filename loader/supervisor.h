// Supervisor: the health of a loader's workers — deaths, workers stuck past
// task_timeout, the restart budget (max_worker_restarts), and the samples a worker died
// on, which are never decoded again. The pool replaces a dead worker (it may serve other
// loaders too) and reports the death; the Supervisor decides what it means for this
// loader and hands the worker's channel to the replacement. What a dead worker held is
// the Dispatcher's to issue again, reading the WorkerHealth this keeps.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <string>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "loader/dispatcher.h"
#include "loader/worker_health.h"
#include "process/worker_pool.h"

namespace forkfeed {

class Supervisor {
 public:
  // `pool` and `index` must outlive this; `loader` is this loader's id in the pool.
  Supervisor(std::shared_ptr<Arena> arena, WorkerPool::Impl& pool, std::uint64_t loader,
             const DatasetIndex& index, const LoaderOptions& options, std::shared_ptr<spdlog::logger> log);

  const WorkerHealth& health() const { return health_; }
  // Worker deaths so far that count against this loader's budget: those with a sample of
  // this loader in hand, and those between samples of a worker that served it. (A bad
  // file of another loader that kills a worker is that loader's death, not this one's.)
  std::uint64_t restarts() const { return restarts_; }

  // Whether `death` ended the life of the worker that serves this loader's channel (not
  // an earlier one, already settled): then its unfinished tasks must be issued again.
  bool served_by(const WorkerDeath& death) const;
  // Settles `death`, reported by the pool, with `unfinished` tasks of this loader on it: a
  // sample of this loader it crashed on is poisoned; a death that is this loader's counts
  // against the restart budget; the worker's channel is rebuilt and handed to the
  // replacement. Returns Ok, or why the loader cannot go on (the error stays).
  Status on_death(const WorkerDeath& death, std::size_t unfinished);

  // Kills each worker that had work of this loader and showed no progress (no sample
  // begun, no task finished, for any loader, since it was given the work) for
  // task_timeout, unless it has another loader's sample in hand (that loader's to time
  // out); the pool then reports its death.
  void kill_stuck_workers(const Dispatcher& dispatcher);

 private:
  // Why the loader cannot go on after a death: the pool is short of a worker, or this
  // loader's deaths (`hit`: this one counts) are over its budget. Ok otherwise.
  Status budget_or_failure(const WorkerDeath& death, const std::string& who, bool hit);

  std::shared_ptr<Arena> arena_;
  WorkerPool::Impl& pool_;
  std::uint64_t loader_;
  const DatasetIndex& index_;
  std::uint32_t task_timeout_ms_;
  std::uint32_t max_worker_restarts_;
  std::shared_ptr<spdlog::logger> log_;
  WorkerHealth health_;
  std::uint64_t restarts_ = 0;
};

}  // namespace forkfeed
