// WorkerPool: the worker processes of one loader — started together, watched, and
// stopped and reaped together.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "loader/worker_launcher.h"

namespace forkfeed {

class WorkerPool {
 public:
  WorkerPool(std::shared_ptr<Arena> arena, std::unique_ptr<WorkerLauncher> launcher, int log_level);
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts one worker per channel of the arena. On failure, those started are stopped.
  Status start();
  // Ok while every worker runs; else an error naming the first one that exited and how.
  Status check();
  // Asks every worker to stop, waits up to `grace`, then kills and reaps the rest.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  const char* start_method() const { return launcher_->name(); }
  std::size_t size() const { return workers_.size(); }

 private:
  std::shared_ptr<Arena> arena_;
  std::unique_ptr<WorkerLauncher> launcher_;
  int log_level_;
  std::vector<ChildProcess> workers_;
};

}  // namespace forkfeed
