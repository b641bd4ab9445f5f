// Dispatcher: the tasks of the current pass on their way to the workers and back. It
// keeps a ledger of what each worker holds, so that a dead worker's tasks are issued
// again (invariant 1), and the completions waiting for their turn; it stamps every task
// with the pass's generation and discards what comes back from an older one (invariant 2).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "loader/pass_demand.h"
#include "loader/pass_position.h"
#include "loader/sampler.h"
#include "loader/slot_pool.h"
#include "loader/worker_health.h"
#include "transport/arena.h"
#include "transport/pool_memory.h"

namespace forkfeed {

class Dispatcher {
 public:
  // One ledger per channel of `arena`, that is per worker of the pool whose shared memory
  // is `pool` (which workers are up, which sample each has in hand; their bells).
  // `health` is the Supervisor's; it and `pool` must outlive this. `loader` is this
  // loader's id in the pool; among workers equally loaded, the first picked is `loader`
  // modulo the pool size, so that loaders sharing a pool start on different workers.
  Dispatcher(std::shared_ptr<Arena> arena, std::shared_ptr<SlotPool> slots, const DatasetIndex& index,
             OnError on_error, const WorkerHealth& health, const PoolMemory& pool, std::uint64_t loader);

  // Starts a new generation in the arena: every task in flight is stale from now on, and
  // the batches waiting for their turn give their slots back.
  void begin_generation();
  std::uint64_t generation() const { return generation_; }

  // Starts the pass at |from| in a new generation: issue() then hands out its batches
  // from |from|.position on, in |sampler|'s order, which must outlive this.
  void begin_pass(const Sampler& sampler, PassPosition::Seek from);
  // Batches of the whole pass that issue() has yet to submit (none in a pass on demand).
  std::uint64_t unissued() const { return sampler_ != nullptr ? sampler_->batches_per_epoch() - issued_ : 0; }
  // Starts a pass of `epoch` on demand, in a new generation: issue() then hands out
  // nothing; issue(demand) the batches wanted, in the order wanted.
  void begin_demand(const Sampler& sampler, std::uint64_t epoch);
  // Submits the pass's next batches while there are free slots (and fewer tasks in
  // flight than the limit). An error (a full task ring) stays: the loader cannot go on.
  Status issue();
  // The same for a pass on demand: the batches of `demand` from its issue cursor on,
  // which moves past each one submitted.
  Status issue(PassDemand& demand);
  // At most `tasks` in flight at once; 0: as many as there are free slots.
  void limit_in_flight(std::uint32_t tasks) { in_flight_limit_ = tasks; }

  // Issues batch `batch_id` of `epoch`'s pass, `samples`, into `slot`, on the least
  // loaded worker (of those not held by another loader's long sample, if any). Samples a worker died on are
  // left out as skipped; under on_error=fail such a batch fails in its turn without going to a worker.
  // Returns an error (and the slot goes back) only if the worker's task ring is full.
  Status submit(std::uint64_t epoch, std::uint64_t batch_id, std::uint32_t slot,
                std::span<const std::uint64_t> samples);

  // Takes in every worker's completions: those of this generation wait for take(),
  // stale or cancelled ones give their slot back.
  void drain();
  // The completion of batch `batch_id`, if it came back; the caller now owns its slot.
  std::optional<Completion> take(std::uint64_t batch_id);

  // Worker `worker` died and its channel was rebuilt: its unfinished tasks of this
  // generation are issued again (slot refilled: the dead worker may have compacted it)
  // when `resubmit`; the slots of the others go back.
  // REQUIRES: drain() since it died, so that what it finished is not issued again.
  Status reissue(std::uint32_t worker, bool resubmit);

  std::uint32_t workers() const { return static_cast<std::uint32_t>(ledger_.size()); }
  // Tasks issued and not completed, over all workers.
  std::size_t in_flight() const;
  // Tasks issued to `worker` and not completed.
  std::size_t unfinished(std::uint32_t worker) const { return ledger_[worker].size(); }
  // When the oldest unfinished task of `worker` was issued (CLOCK_MONOTONIC ns), if any.
  std::optional<std::uint64_t> oldest_issued_ns(std::uint32_t worker) const;
  // Worker time spent on this loader's tasks so far, sample by sample, whatever became of
  // them; and how long the completed tasks waited for a worker (ns).
  std::uint64_t worker_ns() const { return channel_sum(&WorkerChannel::worker_ns); }
  std::uint64_t wait_ns() const { return wait_ns_; }
  // Boxes that the workers' sanitising dropped (LoaderStats::dropped_boxes).
  std::uint64_t dropped_boxes() const { return channel_sum(&WorkerChannel::dropped_boxes); }

 private:
  // A count every worker adds to in its channel, summed over the channels.
  std::uint64_t channel_sum(std::atomic<std::uint64_t> WorkerChannel::*count) const;
  struct Issued {
    Task task;
    std::vector<std::uint64_t> samples;  // to refill the slot if the task is issued again
    std::uint64_t issued_ns;
  };
  Status place(Task task, std::vector<std::uint64_t> samples);
  void start(const Sampler& sampler, std::uint64_t epoch);
  // A free slot for the next task, if the limit on tasks in flight leaves room for one.
  std::optional<std::uint32_t> free_slot();
  std::uint32_t least_loaded_worker() const;
  bool held_by_another(std::uint32_t worker, std::uint64_t now) const;

  std::shared_ptr<Arena> arena_;
  std::shared_ptr<SlotPool> slots_;
  const DatasetIndex& index_;
  OnError on_error_;
  const WorkerHealth& health_;
  const PoolMemory& pool_;
  std::uint64_t loader_;
  std::uint32_t spread_;
  std::uint32_t in_flight_limit_ = 0;
  std::uint64_t generation_ = 0;
  // The pass: its batches in order, and how many were submitted.
  const Sampler* sampler_ = nullptr;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> order_;
  std::uint64_t issued_ = 0;                   // a whole pass: batches submitted, from the first
  std::vector<std::deque<Issued>> ledger_;     // per worker: issued, not yet completed, in order
  std::map<std::uint64_t, Completion> ready_;  // finished, waiting for their turn
  std::uint64_t wait_ns_ = 0;
};

}  // namespace forkfeed
