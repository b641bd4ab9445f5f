// Supervisor: the health of a loader's workers — deaths, workers stuck past
// task_timeout, the restart budget (max_worker_restarts), and the samples a worker died
// on, which are never decoded again. It decides and records; what a dead worker held is
// the Dispatcher's to issue again, reading the WorkerHealth this keeps.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "loader/dispatcher.h"
#include "loader/worker_health.h"
#include "process/worker_pool.h"

namespace forkfeed {

class Supervisor {
 public:
  // `workers` and `index` must outlive this.
  Supervisor(std::shared_ptr<Arena> arena, WorkerPool& workers, const DatasetIndex& index,
             const LoaderOptions& options, std::shared_ptr<spdlog::logger> log);

  const WorkerHealth& health() const { return health_; }
  // Worker deaths so far that were within reach of a restart.
  std::uint64_t restarts() const { return restarts_; }

  // Worker `worker`, reported exited by WorkerPool::wait() with `unfinished` tasks, is
  // replaced within the restart budget, on a rebuilt channel; a sample it crashed on is
  // poisoned. Returns Ok, or why the loader cannot go on (the error stays).
  Status on_exit(std::uint32_t worker, std::size_t unfinished);

  // Kills each worker that had work and showed no progress (no sample begun, no task
  // finished, since it was given work) for task_timeout; wait() then reports its death.
  void kill_stuck_workers(const Dispatcher& dispatcher);

 private:
  std::shared_ptr<Arena> arena_;
  WorkerPool& workers_;
  const DatasetIndex& index_;
  std::uint32_t task_timeout_ms_;
  std::uint32_t max_worker_restarts_;
  std::shared_ptr<spdlog::logger> log_;
  WorkerHealth health_;
  std::uint64_t restarts_ = 0;
};

}  // namespace forkfeed
