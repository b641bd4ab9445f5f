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

Supervisor::Supervisor(std::shared_ptr<Arena> arena, WorkerPool& workers, const DatasetIndex& index,
                       const LoaderOptions& options, std::shared_ptr<spdlog::logger> log)
    : arena_(std::move(arena)),
      workers_(workers),
      index_(index),
      task_timeout_ms_(options.task_timeout_ms),
      max_worker_restarts_(options.max_worker_restarts),
      log_(std::move(log)) {
  health_.killed.assign(arena_->control().num_workers, false);
}

Status Supervisor::on_exit(std::uint32_t w, std::size_t unfinished) {
  const ExitInfo exit = workers_.exit_info(w);
  const Status start_failure = workers_.start_failure(w);  // reads its channel: before it is rebuilt
  // The file is to blame if the worker crashed decoding it — not if it was killed (the
  // OOM killer, an operator, task_timeout: a stopped or starved worker) in the middle.
  const std::uint64_t culprit = exit.crashed() ? arena_->channel(w).current_sample.load() : kNoSample;
  const bool timed_out = health_.killed[w];
  health_.killed[w] = false;
  arena_->reset_channel(w);  // no other process touches it now
  const std::string who = "worker " + std::to_string(w) + " (pid " + std::to_string(workers_.pid(w)) + ") " +
                          (timed_out ? "was killed after task_timeout" : exit.describe());
  Status status = Status::Ok();
  if (!start_failure.ok()) {
    status = start_failure;
  } else if (++restarts_ > max_worker_restarts_) {
    status = Status::WorkerDied(who + "; that is " + std::to_string(restarts_) +
                                " worker deaths, over max_worker_restarts " + std::to_string(max_worker_restarts_) +
                                "; look for the cause in the log, then recreate the Loader");
  } else if (Status s = workers_.replace(w); !s.ok()) {
    status = Status::WorkerDied(who + " and could not be replaced: " + s.message());
  } else {
    log_->warn("{}; replaced it and re-issued its {} unfinished batch(es)", who, unfinished);
  }
  if (culprit != kNoSample) {
    const std::string path = printable(index_.describe(culprit));
    log_->error("{} died while decoding {}; it is treated as a bad file from now on", who, path);
    health_.poisoned.emplace(culprit, "a worker died decoding it (" + exit.describe() + ")");
  }
  return status;
}

void Supervisor::kill_stuck_workers(const Dispatcher& dispatcher) {
  if (task_timeout_ms_ == 0) return;
  const std::uint64_t now = monotonic_ns(), limit = std::uint64_t{task_timeout_ms_} * 1'000'000;
  for (std::uint32_t w = 0; w < dispatcher.workers(); ++w) {
    const std::optional<std::uint64_t> oldest = dispatcher.oldest_issued_ns(w);
    if (!oldest || health_.killed[w]) continue;
    // Its oldest task cannot have started before it was issued. A worker that has not
    // started yet (exec, attach) gets a start-up allowance instead, but not forever.
    const std::uint64_t last = arena_->channel(w).progress_ns.load();
    const std::uint64_t progress = std::max(*oldest, last);
    const std::uint64_t allowed = last == 0 ? std::max(limit, kStartupAllowanceNs) : limit;
    if (now - std::min(progress, now) > allowed) {
      log_->warn("worker {} (pid {}) {} for over {} ms (task_timeout); killing it", w, workers_.pid(w),
                 last == 0 ? "did not start" : "made no progress", allowed / 1'000'000);
      workers_.kill(w);
      health_.killed[w] = true;
    }
  }
}

}  // namespace forkfeed
