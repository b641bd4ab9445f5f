// WorkerPool: start, watch, stop.
#include "loader/worker_pool.h"

#include <unistd.h>

#include "transport/futex.h"

namespace forkfeed {

WorkerPool::WorkerPool(std::shared_ptr<Arena> arena, std::unique_ptr<WorkerLauncher> launcher, int log_level)
    : arena_(std::move(arena)), launcher_(std::move(launcher)), log_level_(log_level) {}

Status WorkerPool::start() {
  const std::uint32_t n = arena_->control().num_workers;
  workers_.reserve(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    auto child = launcher_->launch(*arena_, WorkerIdentity{id, ::getpid(), log_level_});
    if (!child.ok()) {
      stop();
      return child.status();
    }
    workers_.push_back(std::move(child).value());
  }
  return Status::Ok();
}

Status WorkerPool::check() {
  for (std::size_t id = 0; id < workers_.size(); ++id) {
    if (auto exit = workers_[id].poll()) {
      return Status::WorkerDied("worker " + std::to_string(id) + " (pid " + std::to_string(workers_[id].pid()) +
                                ") " + exit->describe());
    }
  }
  return Status::Ok();
}

void WorkerPool::stop(std::chrono::milliseconds grace) {
  if (workers_.empty()) return;
  ControlBlock& control = arena_->control();
  control.stop.store(1, std::memory_order_release);
  for (std::uint32_t id = 0; id < workers_.size(); ++id) futex_ring(&arena_->channel(id).task_bell);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (ChildProcess& w : workers_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    w.wait_for(std::max(left, std::chrono::milliseconds(0)));
    w.kill_and_reap();
  }
  workers_.clear();
}

}  // namespace forkfeed
