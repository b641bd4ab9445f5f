// Supervisor: deaths, restarts, task_timeout, poisoned samples.
#include "loader/supervisor.h"

#include <algorithm>
#include <new>
#include <string>

#include "base/monotonic_clock.h"
#include "base/printable.h"

namespace forkfeed {
namespace {

// How long a worker with work may take to start (exec, attach) before task_timeout
// calls it stuck.
constexpr std::uint64_t kStartupAllowanceNs = 5'000'000'000;

}  // namespace

Supervisor::Supervisor(std::shared_ptr<Arena> arena, WorkerPool::Impl& pool, std::uint64_t loader,
                       const DatasetIndex& index, const LoaderOptions& options,
                       std::shared_ptr<spdlog::logger> log)
    : arena_(std::move(arena)),
      pool_(pool),
      loader_(loader),
      index_(index),
      task_timeout_ms_(options.task_timeout_ms),
      max_worker_restarts_(options.max_worker_restarts),
      log_(std::move(log)) {
  health_.killed.assign(arena_->control().num_workers, false);
}

bool Supervisor::served_by(const WorkerDeath& death) const {
  return arena_->channel(death.worker).incarnation.load(std::memory_order_acquire) == death.incarnation;
}

Status Supervisor::budget_or_failure(const WorkerDeath& death, const std::string& who, bool hit) {
  if (!death.failure.ok()) return death.failure;
  if (hit && ++restarts_ > max_worker_restarts_) {
    return Status::WorkerDied(
        who + "; that is " + std::to_string(restarts_) + " worker deaths, over max_worker_restarts " +
        std::to_string(max_worker_restarts_) + "; look for the cause in the log, then recreate the Loader");
  }
  return Status::Ok();
}

Status Supervisor::on_death(const WorkerDeath& death, std::size_t unfinished) {
  const std::uint32_t w = death.worker;
  const bool served = served_by(death);
  // The file is to blame if the worker crashed decoding it — not if it was killed (the
  // OOM killer, an operator, task_timeout: a stopped or starved worker) in the middle.
  const std::uint64_t culprit =
      death.exit.crashed() && death.culprit_loader == loader_ ? death.culprit_sample : kNoSample;
  const bool timed_out = death.timed_out;  // by this loader, or another on the pool
  if (served) {
    health_.killed[w] = false;
    arena_->reset_channel(w);  // its life is over, and the next one does not read it yet
    arena_->channel(w).incarnation.store(pool_.incarnation(w), std::memory_order_release);
  }
  const std::string who = "worker " + std::to_string(w) + " (pid " + std::to_string(death.pid) + ") " +
                          (timed_out ? "was killed after task_timeout" : death.exit.describe());
  // Whose death it is, for the budget: the loader whose sample the worker had in hand, or
  // between samples every loader it served (with a pool of its own, every death counts).
  const bool in_hand = death.culprit_sample != kNoSample;
  const bool hit = in_hand ? death.culprit_loader == loader_ : served;
  Status status = budget_or_failure(death, who, hit);
  if (status.ok() && served)
    log_->warn("{}; replaced it and re-issued its {} unfinished batch(es)", who, unfinished);
  if (culprit != kNoSample) {
    const std::string path = printable(index_.describe(culprit));
    log_->error("{} died while decoding {}; it is treated as a bad file from now on", who, path);
    health_.poisoned.emplace(culprit, "a worker died decoding it (" + death.exit.describe() + ")");
  }
  return status;
}

void Supervisor::kill_stuck_workers(const Dispatcher& dispatcher) {
  if (task_timeout_ms_ == 0) return;
  const std::uint64_t now = monotonic_ns(), limit = std::uint64_t{task_timeout_ms_} * 1'000'000;
  for (std::uint32_t w = 0; w < dispatcher.workers(); ++w) {
    const std::optional<std::uint64_t> oldest = dispatcher.oldest_issued_ns(w);
    if (!oldest || health_.killed[w]) continue;
    // A worker busy with another loader's sample is that loader's to time out: a slow
    // sample of a loader without task_timeout is no reason to kill it (nor to charge its
    // death to that loader). This loader's tasks wait their turn.
    const WorkerState& state = pool_.state(w);
    if (state.current_sample.load() != kNoSample && state.current_loader.load() != loader_) continue;
    // Its oldest task cannot have started before it was issued. A worker that has not
    // started yet (exec, attach) gets a start-up allowance instead, but not forever.
    const std::uint64_t last = pool_.state(w).progress_ns.load();
    const std::uint64_t progress = std::max(*oldest, last);
    const std::uint64_t allowed = last == 0 ? std::max(limit, kStartupAllowanceNs) : limit;
    if (now - std::min(progress, now) > allowed) {
      log_->warn("worker {} (pid {}) {} for over {} ms (task_timeout); killing it", w, pool_.pid(w),
                 last == 0 ? "did not start" : "made no progress", allowed / 1'000'000);
      pool_.kill(w, arena_->channel(w).incarnation.load());
      health_.killed[w] = true;
    }
  }
}

}  // namespace forkfeed
