// BatchLine: opening the line, the wait for a batch, the events of the pool.
#include "loader/batch_line.h"

#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "plan/arena_plan.h"
#include "plan/slot_count.h"

namespace forkfeed {
namespace {

constexpr auto kEventWait = std::chrono::milliseconds(100);

}  // namespace

BatchLine::BatchLine(const DatasetIndex& index, const Sampler& sampler, std::shared_ptr<spdlog::logger> log)
    : index_(index), sampler_(sampler), log_(std::move(log)) {}

Result<std::unique_ptr<BatchLine>> BatchLine::open(const StreamPlan& plan, const DatasetIndex& index,
                                                   const Sampler& sampler, std::shared_ptr<WorkerPool> pool,
                                                   const FieldBytesBudget& budget,
                                                   std::shared_ptr<spdlog::logger> log) {
  std::unique_ptr<BatchLine> line(new BatchLine(index, sampler, std::move(log)));
  if (Status s = line->start(plan, std::move(pool), budget); !s.ok()) return s;
  return line;
}

Status BatchLine::start(const StreamPlan& plan, std::shared_ptr<WorkerPool> shared,
                        const FieldBytesBudget& budget) {
  const LoaderOptions& options = plan.options();
  // The slots' fields are weighed before any process exists.
  auto planned = arena_spec(plan, index_, options.workers);
  if (!planned.ok()) return planned.status();
  ArenaSpec spec = std::move(planned).value();
  if (Status s = charge_field_bytes(spec, budget); !s.ok()) return s;
  const bool own_pool = shared == nullptr;
  if (own_pool) {
    auto own = WorkerPool::open(
        PoolOptions{options.workers, options.start_method, options.fork_hazard, options.log_level});
    if (!own.ok()) return own.status();
    shared = std::move(own).value();
  }
  pool_ = std::move(shared);
  WorkerPool::Impl& pool = WorkerPool::Impl::of(*pool_);
  const std::uint32_t slots = slot_count(options);
  spec.num_workers = pool.size();  // a channel for each worker of the pool, shared or its own
  auto arena = Arena::create(spec, index_);
  if (!arena.ok()) return arena.status();
  arena_ = std::move(arena).value();
  slots_ = std::make_shared<SlotPool>(slots);
  completions_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!completions_.valid()) return Status::FromErrno("eventfd for the loader's completions", errno);
  auto membership = pool.attach(*arena_, completions_.get());
  if (!membership.ok()) return membership.status();
  membership_ = std::move(membership).value();
  supervisor_ = std::make_unique<Supervisor>(arena_, pool, membership_.id(), index_, options, log_);
  dispatcher_ = std::make_unique<Dispatcher>(arena_, slots_, index_, options.on_error, supervisor_->health(),
                                             pool.memory(), membership_.id());
  // After the workers started, before any batch is issued: they were forked from a
  // process without a context of ours (forking after CUDA init is a hazard), and no
  // worker writes a slot yet.
  const SlotGeometry& g = arena_->control().slots;
  auto window = SlotWindow::map(arena_->fd(), arena_->size(), true,
                                {g.slots_offset, g.slot_stride, g.num_slots, options.pin_memory_device});
  if (!window.ok()) return window.status();
  window_ = std::move(window).value();
  if (options.pin_memory_device >= 0) log_->info("{}", window_->pin_summary());
  held_ = std::make_shared<HeldBatches>(log_, "loader");
  workers_ = options.workers;
  delivery_ = std::make_unique<Delivery>(arena_, slots_, index_, log_);
  log_->info("{} {} workers by {}; {} samples, {} batches of {} per epoch; arena {:.1f} MiB in {} slots",
             own_pool ? "started" : "attached to a pool of", pool.size(), to_string(pool.start_method()),
             sampler_.samples_per_epoch(), sampler_.batches_per_epoch(), options.batch_size,
             arena_->size() / 1048576.0, slots);
  return Status::Ok();
}

void BatchLine::begin_pass(PassPosition::Seek seek) {
  dispatcher_->begin_pass(sampler_, seek);
  interrupted_.store(false, std::memory_order_relaxed);
}

void BatchLine::begin_demand(std::uint64_t epoch) {
  dispatcher_->begin_demand(sampler_, epoch);
  interrupted_.store(false, std::memory_order_relaxed);
}

void BatchLine::issue(PassDemand* demand) {
  if (broken_.ok()) broken_ = demand != nullptr ? dispatcher_->issue(*demand) : dispatcher_->issue();
}

bool BatchLine::consumed(const Result<std::optional<Batch>>& batch) const {
  return batch.ok() || (batch.status().code() == Status::Code::kBadData && !broken_reported_);
}

Result<std::optional<Batch>> BatchLine::take(std::uint64_t epoch, std::uint64_t index, PassDemand* demand) {
  while (true) {
    // Completions were taken in by handle_events: they free slots and show which
    // workers are idle.
    issue(demand);
    if (auto c = dispatcher_->take(index)) {
      auto batch = delivery_->deliver(*c, epoch, index, {window_, 0, 0, held_});
      if (!batch.ok() && batch.status().code() != Status::Code::kBadData) {
        broken_ = batch.status();
        broken_reported_ = true;
      }
      return batch;
    }
    // Batches completed before a fatal error are still delivered, in order; once the
    // error is reported, it stays.
    if (!broken_.ok()) {
      broken_reported_ = true;
      return broken_;
    }
    if (dispatcher_->in_flight() == 0 && slots_->free_count() == 0) {
      // Every slot is in the caller's hands: the oldest batches become copies, a slot free
      // for each of the loader's workers, or for each batch the pass has yet to issue.
      const std::uint64_t unissued = demand != nullptr ? demand->unissued() : dispatcher_->unissued();
      const std::size_t count = std::clamp<std::uint64_t>(unissued, 1, workers_);
      Result<bool> copied = held_ != nullptr ? held_->copy_oldest_aside(count) : Result<bool>(false);
      if (!copied.ok()) return copied.status();
      if (!*copied) return every_slot_held();
      continue;
    }
    // Checked only where next() would wait: a worker that is stopped (SIGSTOP) or
    // stuck must not hold up a Ctrl-C. The signal also cuts the wait's poll() short.
    if (interrupted_.exchange(false, std::memory_order_relaxed)) {
      return Status::Cancelled("interrupted while waiting for batch " + std::to_string(index) +
                               " (Loader::interrupt); the pass is unchanged and next() goes on with it");
    }
    handle_events(kEventWait);
  }
}

void BatchLine::handle_events(std::chrono::milliseconds wait) {
  WorkerPool::Impl& pool = WorkerPool::Impl::of(*pool_);
  pool.wait(completions_.get(), wait);
  dispatcher_->drain();  // also picks up what dying workers finished before they died
  for (const WorkerDeath& death : pool.take_deaths(membership_.id())) {
    const bool served = supervisor_->served_by(death);
    if (Status s = supervisor_->on_death(death, dispatcher_->unfinished(death.worker)); !s.ok()) broken_ = s;
    if (!served) continue;  // an earlier life, settled already
    if (Status s = dispatcher_->reissue(death.worker, broken_.ok()); !s.ok()) broken_ = s;
  }
  supervisor_->kill_stuck_workers(*dispatcher_);
}

void BatchLine::count_into(LoaderStats& s) const {
  delivery_->count_into(s);
  s.worker_restarts = supervisor_->restarts();
  s.arena_bytes = arena_->size();
  s.index_bytes = arena_->index_bytes();
  s.slots = arena_->control().slots.num_slots;
  s.start_method = pool_->start_method();
  s.pinned = window_->pinned();
  if (held_ != nullptr) {
    s.copied_batches = held_->copied_batches();
    s.copied_bytes = held_->copied_bytes();
  }
  s.worker_ns = dispatcher_->worker_ns();
  s.dropped_boxes = dispatcher_->dropped_boxes();
  s.wait_ns = dispatcher_->wait_ns();
}

Loader::SharedMemory BatchLine::shared_memory() const {
  return {arena_->fd(), window_->data(), window_->size(), arena_->control().slots.slot_stride};
}

}  // namespace forkfeed
