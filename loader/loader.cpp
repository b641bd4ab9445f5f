// Loader: the orchestrator. It delegates to the Sampler (what to read), the SlotPool
// (where to write it), the Dispatcher (which worker holds which task, and what came
// back), the Supervisor (who died, who is stuck, which files kill workers), Delivery
// (a completion made a Batch or an error) and the WorkerPool it is attached to (the
// processes, its own or shared with other loaders). What it
// keeps itself is the pass: batches handed out in order, the position moving on
// delivery only (PassPosition).
#include "forkfeed/loader.h"

#include <spdlog/spdlog.h>

#include <sys/eventfd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
#include <new>
#include <optional>

#include "base/logging.h"
#include "base/out_of_memory.h"
#include "base/owner_process.h"
#include "base/printable.h"
#include "dataset/dataset_source.h"
#include "loader/checkpoint.h"
#include "loader/delivery.h"
#include "loader/dispatcher.h"
#include "loader/loader_internals.h"
#include "loader/pass_position.h"
#include "loader/pass_yield.h"
#include "loader/sampler.h"
#include "loader/slot_count.h"
#include "loader/supervisor.h"
#include "loader/transform_spec.h"
#include "process/worker_pool.h"
#include "transport/pinned_memory.h"

namespace forkfeed {
namespace {

constexpr auto kEventWait = std::chrono::milliseconds(100);

}  // namespace

class Loader::Impl {
 public:
  Impl(const LoaderOptions& options, DatasetIndex index, std::shared_ptr<WorkerPool> pool)
      : options_(options),
        index_(std::move(index)),
        sampler_(SamplerSpec{index_.size(), options.seed, options.rank, options.world_size, options.batch_size,
                             options.shuffle, options.drop_last}),
        key_(order_key(index_, options)),
        log_(loader_logger()),
        pool_(std::move(pool)),
        pass_(sampler_.batches_per_epoch(), {options.epoch, 0}) {}

  Status start(PassPosition::Seek from) {
    const bool own_pool = pool_ == nullptr;
    if (own_pool) {
      auto pool = WorkerPool::open(PoolOptions{options_.workers, options_.start_method, options_.fork_hazard,
                                               options_.log_level});
      if (!pool.ok()) return pool.status();
      pool_ = std::move(pool).value();
    }
    WorkerPool::Impl& pool = WorkerPool::Impl::of(*pool_);
    const std::uint32_t slots = slot_count(options_);
    auto arena = Arena::create(arena_spec(options_, pool.size()), index_);
    if (!arena.ok()) return arena.status();
    arena_ = std::move(arena).value();
    slots_ = std::make_shared<SlotPool>(slots);
    completions_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!completions_.valid()) return Status::FromErrno("eventfd for the loader's completions", errno);
    auto membership = pool.attach(*arena_, completions_.get());
    if (!membership.ok()) return membership.status();
    membership_ = std::move(membership).value();
    supervisor_ = std::make_unique<Supervisor>(arena_, pool, membership_.id(), index_, options_, log_);
    dispatcher_ = std::make_unique<Dispatcher>(arena_, slots_, index_, options_.on_error, supervisor_->health(),
                                               pool.memory(), membership_.id());
    delivery_ = std::make_unique<Delivery>(arena_, slots_, index_, log_);
    // After the workers started, before any batch is issued: they were forked from a
    // process without a context of ours (forking after CUDA init is a hazard), and no
    // worker writes a slot yet.
    if (options_.pin_memory_device >= 0) {
      pinned_.emplace(PinnedRegistration::pin(arena_->slot_region(), options_.pin_memory_device));
      log_->info("{}", pinned_->summary());
    }
    log_->info("{} {} workers by {}; {} samples, {} batches of {} per epoch; arena {:.1f} MiB in {} slots",
               own_pool ? "started" : "attached to a pool of", pool.size(), to_string(pool.start_method()),
               sampler_.samples_per_epoch(), sampler_.batches_per_epoch(), options_.batch_size,
               arena_->size() / 1048576.0, slots);
    begin_pass(from);
    return Status::Ok();
  }

  Status check_process() const {
    return owner_.check("Loader", "open a new Loader in this process (the parent's goes on unaffected)");
  }

  Result<std::optional<Batch>> next() {
    if (Status s = check_process(); !s.ok()) return s;
    if (broken_reported_) return broken_;
    if (auto seek = pass_.on_next()) begin_pass(*seek);
    // A death is handled at the next call even when no wait is needed: a dead worker
    // may hold no task (work goes to workers that are up), and its slot in the pool of
    // workers is replaced at once.
    handle_events(std::chrono::milliseconds(0));
    while (true) {
      if (broken_.ok()) broken_ = dispatcher_->issue();
      if (pass_.complete()) {
        pass_.ended(pass_.epoch());
        if (Status s = yield_.at_end(pass_.epoch(), delivery_->counts()); !s.ok()) return s;
        return std::optional<Batch>();
      }
      const std::uint64_t index = pass_.position();
      auto batch = take(index);
      if (!consumed(batch)) return batch;
      pass_.delivered(pass_.epoch(), index);  // the position moves on delivery only
      if (!batch.ok() || batch->has_value()) return batch;
      // every sample of that batch was skipped
    }
  }

  // The next batch wanted of a pass on demand, as next() would deliver it in a whole
  // pass; the index of the batch the call was about comes with it.
  Result<LoaderInternals::Wanted> next_wanted() {
    if (Status s = check_process(); !s.ok()) return s;
    if (broken_reported_) return broken_;
    if (!demand_ || demand_->empty()) return Status::FailedPrecondition("no batch is wanted");
    handle_events(std::chrono::milliseconds(0));
    const std::uint64_t index = demand_->front();
    auto batch = take(index);
    if (!consumed(batch)) return batch.status();
    demand_->pop_front();
    return LoaderInternals::Wanted{index, std::move(batch)};
  }

  // Whether take() gave its batch: a Batch, nothing, or its bad file's error.
  bool consumed(const Result<std::optional<Batch>>& batch) const {
    return batch.ok() || (batch.status().code() == Status::Code::kBadData && !broken_reported_);
  }

  // Waits for batch `index` of the pass and makes it what next() hands out: a Batch, a
  // batch failed by its own bad data (consumed: the pass goes on after it), or nullopt
  // when every sample was skipped. Any other failure — the machine's, a dataset changed
  // under the loader, a bug of ours, an interrupt, a full pool of slots — leaves the
  // batch where it is (broken_reported_ says whether for good), so that state() resumes
  // there and no good sample is lost.
  Result<std::optional<Batch>> take(std::uint64_t index) {
    while (true) {
      // Completions were taken in by handle_events: they free slots and show which
      // workers are idle.
      if (broken_.ok()) broken_ = dispatcher_->issue();
      if (auto c = dispatcher_->take(index)) {
        auto batch = delivery_->deliver(*c, pass_.epoch(), index);
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
      if (dispatcher_->in_flight() == 0 && slots_->free_count() == 0) return every_slot_held();
      // Checked only where next() would wait: a worker that is stopped (SIGSTOP) or
      // stuck must not hold up a Ctrl-C. The signal also cuts the wait's poll() short.
      if (interrupted_.exchange(false, std::memory_order_relaxed)) {
        return Status::Cancelled("interrupted while waiting for batch " + std::to_string(index) +
                                 " (Loader::interrupt); the pass is unchanged and next() goes on with it");
      }
      handle_events(kEventWait);
    }
  }

  void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }

  // The rules are PassPosition's.
  Status set_epoch(std::uint64_t epoch) {
    if (Status s = check_process(); !s.ok()) return s;
    if (Status s = PassPosition::check_epoch(epoch, "epoch"); !s.ok()) return s;
    if (auto seek = pass_.on_set_epoch(epoch)) begin_pass(*seek);
    return Status::Ok();
  }
  Status reset() {
    if (Status s = check_process(); !s.ok()) return s;
    if (auto seek = pass_.on_reset()) begin_pass(*seek);
    return Status::Ok();
  }

  std::string state() const { return pass_.state(key_); }
  Result<PassPosition::Seek> parse_state(std::string_view state) const {
    return pass_.parse_state(state, key_, &index_);
  }
  Status load_state(std::string_view state) {
    if (Status s = check_process(); !s.ok()) return s;
    auto seek = parse_state(state);
    if (!seek.ok()) return seek.status();
    if (auto start = pass_.load(*seek)) begin_pass(*start);
    return Status::Ok();
  }
  // For LoaderInternals: load_state() without the JSON.
  Status seek(PassPosition::Seek to) {
    if (Status s = check_process(); !s.ok()) return s;
    auto seek = PassPosition::start_of(Checkpoint{to.epoch, to.position, key_}, sampler_.batches_per_epoch());
    if (!seek.ok()) return seek.status();
    if (auto start = pass_.load(*seek)) begin_pass(*start);
    return Status::Ok();
  }
  PassPosition::Seek resume_point() const { return pass_.resume_point(); }
  // For LoaderInternals: a pass on demand.
  Status begin_demand(std::uint64_t epoch) {
    if (Status s = check_process(); !s.ok()) return s;
    if (Status s = PassPosition::check_epoch(epoch, "epoch"); !s.ok()) return s;
    dispatcher_->begin_demand(sampler_, epoch);
    pass_.start({epoch, 0});
    demand_.emplace();
    interrupted_.store(false, std::memory_order_relaxed);
    return Status::Ok();
  }
  Status want(std::uint64_t batch) {
    if (!demand_) return Status::FailedPrecondition("the pass is not on demand: seek it on demand first");
    if (batch >= sampler_.batches_per_epoch()) {
      return Status::InvalidArgument("batch " + std::to_string(batch) + " is past the end of the epoch (" +
                                     std::to_string(sampler_.batches_per_epoch()) + " batches)");
    }
    demand_->push_back(batch);
    dispatcher_->want(batch);
    return Status::Ok();
  }
  std::size_t wanted() const { return demand_ ? demand_->size() : 0; }
  const OrderKey& key() const { return key_; }
  bool broken() const { return broken_reported_; }
  void limit_in_flight(std::uint32_t tasks) { dispatcher_->limit_in_flight(tasks); }
  std::uint64_t worker_ns() const { return dispatcher_->worker_ns(); }

  std::uint64_t epoch() const { return pass_.epoch(); }
  const Sampler& sampler() const { return sampler_; }
  const DatasetIndex& index() const { return index_; }
  LoaderStats stats() const {
    LoaderStats s;
    delivery_->count_into(s);
    s.skipped_samples += index_.skipped_samples();  // left out while indexing, once
    s.skipped_bytes = index_.skipped_bytes();
    s.worker_restarts = supervisor_->restarts();
    s.arena_bytes = arena_->size();
    s.index_bytes = arena_->index_bytes();
    s.slots = slot_count(options_);
    s.start_method = pool_->start_method();
    s.pinned = pinned_ && pinned_->pinned();
    s.worker_ns = dispatcher_->worker_ns();
    s.wait_ns = dispatcher_->wait_ns();
    return s;
  }
  Loader::SharedMemory shared_memory() const {
    return {arena_->fd(), arena_->data(), arena_->size(), arena_->control().slots.slot_stride};
  }

 private:
  // Starts a pass at `seek`: a new generation makes every task in flight stale; their
  // slots come back with their (discarded) completions.
  void begin_pass(PassPosition::Seek seek) {
    dispatcher_->begin_pass(sampler_, seek);
    demand_.reset();
    pass_.start(seek);
    yield_.start(seek.position, delivery_->counts());
    interrupted_.store(false, std::memory_order_relaxed);  // an interrupt is for the pass it cut short
  }

  // Waits up to `wait` for a completion or a death, then takes in completions, replaces
  // dead workers (their unfinished tasks issued again) and kills stuck ones.
  void handle_events(std::chrono::milliseconds wait) {
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

  OwnerProcess owner_;
  LoaderOptions options_;
  DatasetIndex index_;
  Sampler sampler_;
  OrderKey key_;
  std::shared_ptr<spdlog::logger> log_;
  // Its own (the workers stop with the loader) or one shared with other loaders.
  std::shared_ptr<WorkerPool> pool_;
  std::shared_ptr<Arena> arena_;
  std::optional<PinnedRegistration> pinned_;  // after arena_: unpinned before it may unmap
  std::shared_ptr<SlotPool> slots_;
  UniqueFd completions_;  // eventfd: the workers write it after each completion
  // After the arena and the eventfd: the workers let go of both before they close.
  WorkerPool::Impl::Membership membership_;
  std::unique_ptr<Supervisor> supervisor_;  // reads pool_
  std::unique_ptr<Dispatcher> dispatcher_;  // reads supervisor_'s WorkerHealth
  std::unique_ptr<Delivery> delivery_;

  // The current pass.
  PassPosition pass_;  // epoch and batches handed to the caller
  PassYield yield_;    // whether it gave the caller anything
  // A pass on demand (forkfeedd serving a fan-in client): the batches wanted and not yet
  // handed out, in the order wanted; pass_ then only holds the epoch.
  std::optional<std::deque<std::uint64_t>> demand_;
  Status broken_;
  bool broken_reported_ = false;
  // Set by interrupt(), perhaps from a signal handler: lock-free, so async-signal-safe.
  std::atomic<bool> interrupted_ = false;
  static_assert(std::atomic<bool>::is_always_lock_free);
};

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options) { return open(options, {}, nullptr); }

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options, std::string_view state) {
  return open(options, state, nullptr);
}

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options, std::shared_ptr<WorkerPool> pool) {
  return open(options, {}, std::move(pool));
}

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& given, std::string_view state,
                                             std::shared_ptr<WorkerPool> pool) {
  if (Status s = validate(given); !s.ok()) return s;
  // From here on, size and dtype are what the transform makes (validate checked it).
  const LoaderOptions options = resolve_transform(given).value();
  if (Status s = set_log_level(options.log_level); !s.ok()) return s;
  auto index = open_dataset(options);  // names the index it was building if memory runs out
  if (!index.ok()) return index.status();
  // The rest allocates too (the order, the arena's copy of the index): a failure is an
  // error, and what was made so far (workers included) is undone by unwinding.
  try {
    auto impl = std::make_unique<Impl>(options, std::move(index).value(), std::move(pool));
    if (impl->sampler().batches_per_epoch() == 0) {
      return Status::InvalidArgument(
          "no batch to deliver: " + std::to_string(impl->sampler().samples_per_epoch()) +
          " samples per rank and batch size " + std::to_string(options.batch_size) + " with drop_last");
    }
    PassPosition::Seek from{options.epoch, 0};
    if (!state.empty()) {  // checked before any process or shared memory exists
      auto seek = impl->parse_state(state);
      if (!seek.ok()) return seek.status();
      from = *seek;
    }
    if (Status s = impl->start(from); !s.ok()) return s;
    return std::unique_ptr<Loader>(new Loader(std::move(impl)));
  } catch (const std::bad_alloc&) {
    return out_of_memory("opening the loader of " + printable(DatasetSource::of(options).describe()));
  }
}

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

Result<std::optional<Batch>> Loader::next() { return impl_->next(); }
void Loader::interrupt() { impl_->interrupt(); }
Status Loader::set_epoch(std::uint64_t epoch) { return impl_->set_epoch(epoch); }
Status Loader::reset() { return impl_->reset(); }
Status Loader::check_process() const { return impl_->check_process(); }
std::string Loader::state() const { return impl_->state(); }
Status Loader::load_state(std::string_view state) { return impl_->load_state(state); }
std::uint64_t Loader::epoch() const { return impl_->epoch(); }
std::uint64_t Loader::batches_per_epoch() const { return impl_->sampler().batches_per_epoch(); }
std::uint64_t Loader::samples_per_epoch() const { return impl_->sampler().samples_per_epoch(); }
const DatasetIndex& Loader::dataset() const { return impl_->index(); }
LoaderStats Loader::stats() const { return impl_->stats(); }
Loader::SharedMemory Loader::shared_memory() const { return impl_->shared_memory(); }

PassPosition::Seek LoaderInternals::position(const Loader& loader) { return loader.impl_->resume_point(); }
const OrderKey& LoaderInternals::order_key(const Loader& loader) { return loader.impl_->key(); }
Status LoaderInternals::seek(Loader& loader, PassPosition::Seek to) { return loader.impl_->seek(to); }
bool LoaderInternals::broken(const Loader& loader) { return loader.impl_->broken(); }
void LoaderInternals::limit_in_flight(Loader& loader, std::uint32_t tasks) {
  loader.impl_->limit_in_flight(tasks);
}
std::uint64_t LoaderInternals::worker_ns(const Loader& loader) { return loader.impl_->worker_ns(); }
Status LoaderInternals::begin_demand(Loader& loader, std::uint64_t epoch) { return loader.impl_->begin_demand(epoch); }
Status LoaderInternals::want(Loader& loader, std::uint64_t batch) { return loader.impl_->want(batch); }
std::size_t LoaderInternals::wanted(const Loader& loader) { return loader.impl_->wanted(); }
Result<LoaderInternals::Wanted> LoaderInternals::next_wanted(Loader& loader) { return loader.impl_->next_wanted(); }

Loader::Iterator Loader::begin() {
  if (Status s = impl_->reset(); !s.ok()) throw Error(s);  // a new range-for is a new pass
  return Iterator(this);
}

}  // namespace forkfeed
