// BatchLine: what makes a Loader's batches, from issue to delivery. It attaches the
// loader to a worker pool (its own or a shared one), lays out its arena, and runs the
// Dispatcher, the Supervisor and Delivery over them: take(i) issues what the pass has
// next, waits for batch i and makes it what next() hands out. The pass's rules — which
// batch comes next, where the position stands — are the Loader's (PassPosition,
// PassDemand); the line only makes what it is asked for.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/unique_fd.h"
#include "forkfeed/batch.h"
#include "forkfeed/dataset.h"
#include "forkfeed/loader.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "loader/delivery.h"
#include "loader/dispatcher.h"
#include "loader/held_batches.h"
#include "loader/pass_demand.h"
#include "loader/pass_position.h"
#include "loader/pass_yield.h"
#include "loader/sampler.h"
#include "loader/slot_pool.h"
#include "loader/supervisor.h"
#include "plan/slot_count.h"
#include "plan/stream_plan.h"
#include "process/worker_pool.h"
#include "transport/arena.h"
#include "transport/slot_window.h"

namespace forkfeed {

class BatchLine {
 public:
  // Attaches to `pool` (null: starts a pool of `plan->workers` of its own), creates
  // the arena holding `index`, and maps its slots where batches are read, pinned when the
  // options ask. What its fields add to
  // the slots is charged to `budget` first. `index` and `sampler` must outlive this.
  static Result<std::unique_ptr<BatchLine>> open(const StreamPlan& plan, const DatasetIndex& index,
                                                 const Sampler& sampler, std::shared_ptr<WorkerPool> pool,
                                                 const FieldBytesBudget& budget,
                                                 std::shared_ptr<spdlog::logger> log);
  BatchLine(const BatchLine&) = delete;
  BatchLine& operator=(const BatchLine&) = delete;

  // Starts a whole pass at `seek`, or a pass of `epoch` on demand, in a new generation:
  // every task in flight is stale; their slots come back with their (discarded)
  // completions. An interrupt no wait has taken is forgotten: it was for the pass it cut short.
  void begin_pass(PassPosition::Seek seek);
  void begin_demand(std::uint64_t epoch);

  // Waits for batch `index` of `epoch`'s pass (issuing the pass's next batches: the whole
  // pass's, or `demand`'s when not null) and makes it what next() hands out: a Batch, a
  // batch failed by its own bad data (consumed: the pass goes on after it), or nullopt
  // when every sample was skipped. Any other failure — the machine's, a dataset changed
  // under the loader, a bug of ours, an interrupt, a full pool of slots — leaves the
  // batch where it is (broken() says whether for good), so that state() resumes there
  // and no good sample is lost.
  Result<std::optional<Batch>> take(std::uint64_t epoch, std::uint64_t index, PassDemand* demand);
  // Whether take() gave its batch: a Batch, nothing, or its bad file's error.
  bool consumed(const Result<std::optional<Batch>>& batch) const;
  // Takes in what happened since the last call without waiting: a death is handled at
  // the next call even when no wait is needed (a dead worker may hold no task, and its
  // place in the pool is refilled at once).
  void poll() { handle_events(std::chrono::milliseconds(0)); }

  // Whether take() reported an error that ends the loader; error() is it.
  bool broken() const { return broken_reported_; }
  const Status& error() const { return broken_; }
  // Async-signal-safe (Loader::interrupt).
  void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }
  void limit_in_flight(std::uint32_t tasks) { dispatcher_->limit_in_flight(tasks); }
  // The batches are lent to another process (forkfeedd's streams), which reads them in its
  // own mapping: a copy here would not be seen there, so none is ever copied aside.
  void lend_only() { held_ = nullptr; }
  std::uint64_t worker_ns() const { return dispatcher_->worker_ns(); }
  // Samples delivered and skipped so far (PassYield's counts).
  PassYield::Counts counts() const { return delivery_->counts(); }
  // Adds the line's side of the stats: deliveries, restarts, the arena, the pool, times.
  void count_into(LoaderStats& stats) const;
  Loader::SharedMemory shared_memory() const;
  // The arena's control block: its slots' geometry and the fields placed in each.
  const ControlBlock& control() const { return arena_->control(); }

 private:
  BatchLine(const DatasetIndex& index, const Sampler& sampler, std::shared_ptr<spdlog::logger> log);
  Status start(const StreamPlan& plan, std::shared_ptr<WorkerPool> pool, const FieldBytesBudget& budget);
  // Issues what the pass has next; an error stays (broken_).
  void issue(PassDemand* demand);
  // Waits up to `wait` for a completion or a death, then takes in completions, replaces
  // dead workers (their unfinished tasks issued again) and kills stuck ones.
  void handle_events(std::chrono::milliseconds wait);

  const DatasetIndex& index_;
  const Sampler& sampler_;
  std::shared_ptr<spdlog::logger> log_;
  // Its own (the workers stop with the loader) or one shared with other loaders.
  std::shared_ptr<WorkerPool> pool_;
  std::shared_ptr<Arena> arena_;
  // Where the batches are read (and pinned): a mapping apart from the arena's, in which a
  // batch held while every slot is can be copied aside; and the batches held, oldest first.
  std::shared_ptr<SlotWindow> window_;
  std::shared_ptr<HeldBatches> held_;  // null: lend_only()
  std::uint32_t workers_ = 1;          // the most batches copied aside at once
  std::shared_ptr<SlotPool> slots_;
  UniqueFd completions_;  // eventfd: the workers write it after each completion
  // After the arena and the eventfd: the workers let go of both before they close.
  WorkerPool::Impl::Membership membership_;
  std::unique_ptr<Supervisor> supervisor_;  // reads pool_
  std::unique_ptr<Dispatcher> dispatcher_;  // reads supervisor_'s WorkerHealth
  std::unique_ptr<Delivery> delivery_;
  Status broken_;
  bool broken_reported_ = false;
  // Set by interrupt(), perhaps from a signal handler: lock-free, so async-signal-safe.
  std::atomic<bool> interrupted_ = false;
  static_assert(std::atomic<bool>::is_always_lock_free);
};

}  // namespace forkfeed
