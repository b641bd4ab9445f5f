// WorkerPool: the worker processes of one loader — started together, watched through
// pidfds and one completion eventfd in a single poll(), replaced one by one when they
// die, and stopped and reaped together.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "process/worker_launcher.h"

namespace forkfeed {

class WorkerPool {
 public:
  // `first` starts the initial workers; `replacement` starts the ones that replace
  // dead workers (this process may have become unsafe to fork since).
  WorkerPool(std::shared_ptr<Arena> arena, std::unique_ptr<WorkerLauncher> first,
             std::unique_ptr<WorkerLauncher> replacement, int log_level);
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts one worker per channel of the arena. On failure, those started are stopped.
  Status start();

  struct Events {
    std::vector<std::uint32_t> exited;  // workers that exited (reaped), each reported once
  };
  // Sleeps until a worker completes a task or exits, at most `timeout`.
  Events wait(std::chrono::milliseconds timeout);
  // How worker `id` ended. REQUIRES: it was reported in Events::exited.
  ExitInfo exit_info(std::uint32_t id);
  // Why worker `id` could not start at all, or Ok if it could. A spawned worker that
  // exited 127 or 126 (its executable or libraries could not be run) before its first
  // heartbeat would fail the same way again: the error names the executable and the last
  // line it wrote to stderr. Passes what it wrote before starting on to this process's
  // stderr. REQUIRES: it was reported in Events::exited, and its channel not rebuilt yet.
  Status start_failure(std::uint32_t id);
  pid_t pid(std::uint32_t id) const { return workers_[id].process.pid(); }
  // Starts a replacement for worker `id`, whose channel the caller has rebuilt.
  Status replace(std::uint32_t id);
  // SIGKILLs worker `id`; its death is then reported by wait() like any other.
  void kill(std::uint32_t id);
  // Asks every worker to stop, waits up to `grace`, then kills and reaps the rest. In a
  // process other than the one that started them (a fork's child), only forgets them.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  StartMethod start_method() const { return first_->method(); }

 private:
  Result<LaunchedWorker> launch(WorkerLauncher& launcher, std::uint32_t id);

  std::shared_ptr<Arena> arena_;
  std::unique_ptr<WorkerLauncher> first_;
  std::unique_ptr<WorkerLauncher> replacement_;
  int log_level_;
  UniqueFd completions_;  // eventfd, written by workers
  std::vector<LaunchedWorker> workers_;
  OwnerProcess owner_;
};

}  // namespace forkfeed
