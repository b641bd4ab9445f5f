// Loader: the orchestrator. It delegates to the Sampler (what to read), the SlotPool
// (where to write it), the WorkerPool (who decodes, and who died), and the rings in the
// Arena (how work moves). What it keeps itself is the pass: what was issued to whom,
// what came back, and what was delivered, in order — and that is what makes every
// sample arrive exactly once through resets, resumes and worker deaths.
#include "forkfeed/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loader/batch_factory.h"
#include "loader/checkpoint.h"
#include "loader/loader_internals.h"
#include "loader/logging.h"
#include "loader/pass_position.h"
#include "loader/sampler.h"
#include "loader/slot_count.h"
#include "loader/start_method.h"
#include "loader/transform_spec.h"
#include "loader/worker_pool.h"
#include "transport/futex.h"
#include "transport/monotonic_clock.h"
#include "transport/pinned_memory.h"
#include "transport/printable.h"
#include "transport/slot_contents.h"
#include "workers/transform.h"

namespace forkfeed {
namespace {

constexpr auto kEventWait = std::chrono::milliseconds(100);
// How long a worker with work may take to start (exec, attach) before task_timeout
// calls it stuck.
constexpr std::uint64_t kStartupAllowanceNs = 5'000'000'000;

}  // namespace

class Loader::Impl {
 public:
  Impl(const LoaderOptions& options, DatasetIndex index)
      : options_(options),
        index_(std::move(index)),
        sampler_(SamplerSpec{index_.size(), options.seed, options.rank, options.world_size, options.batch_size,
                             options.shuffle, options.drop_last}),
        key_(order_key(index_, options)),
        log_(loader_logger()),
        pass_(sampler_.batches_per_epoch(), {options.epoch, 0}) {}

  ~Impl() {
    if (workers_) workers_->stop();
  }

  Status start(PassPosition::Seek from) {
    const std::uint32_t slots = slot_count(options_);
    auto arena = Arena::create(ArenaSpec{options_.workers, slots, options_.batch_size,
                                         sample_bytes(options_.dtype, options_.size), transform_spec(options_),
                                         options_.on_error},
                               index_);
    if (!arena.ok()) return arena.status();
    arena_ = std::move(arena).value();
    slots_ = std::make_shared<SlotPool>(slots);
    outstanding_.assign(options_.workers, {});
    killed_.assign(options_.workers, false);
    auto start = choose_start_method(options_, ForkSafety::assess());
    if (!start.ok()) return start.status();
    if (!start->warning.empty()) log_->warn("{}", start->warning);
    workers_ = std::make_unique<WorkerPool>(arena_, std::move(start->launcher), make_spawn_launcher(), log_->level());
    if (Status s = workers_->start(); !s.ok()) return s;
    // After the workers started, before any batch is issued: they were forked from a
    // process without a context of ours (forking after CUDA init is a hazard), and no
    // worker writes a slot yet.
    if (options_.pin_memory_device >= 0) {
      pinned_.emplace(PinnedRegistration::pin(arena_->slot_region(), options_.pin_memory_device));
      log_->info("{}", pinned_->summary());
    }
    log_->info("started {} workers by {} ({}); {} samples, {} batches of {} per epoch; arena {:.1f} MiB in {} slots",
               options_.workers, to_string(workers_->start_method()), start->why, sampler_.samples_per_epoch(),
               sampler_.batches_per_epoch(), options_.batch_size, arena_->size() / 1048576.0, slots);
    begin_pass(from);
    return Status::Ok();
  }

  Result<std::optional<Batch>> next() {
    if (broken_reported_) return broken_;
    if (auto seek = pass_.on_next()) begin_pass(*seek);
    // A death is handled at the next call even when no wait is needed: a dead worker
    // may hold no task (work goes to workers that are up), and its slot in the pool of
    // workers is replaced at once.
    handle_events(std::chrono::milliseconds(0));
    while (true) {
      drain();  // completions first: they free slots and show which workers are idle
      if (broken_.ok()) issue();
      if (pass_.complete()) {
        pass_.ended(pass_.epoch());
        return std::optional<Batch>();
      }
      if (auto it = ready_.find(pass_.position()); it != ready_.end()) {
        const Completion c = it->second;
        ready_.erase(it);
        auto batch = deliver(c);
        if (!batch.ok() || batch->has_value()) return batch;
        continue;  // every sample of that batch was skipped
      }
      // Batches completed before a fatal error are still delivered, in order; once the
      // error is reported, it stays.
      if (!broken_.ok()) {
        broken_reported_ = true;
        return broken_;
      }
      if (in_flight() == 0 && slots_->free_count() == 0) {
        return Status::ResourceExhausted("every batch slot is held by a Batch the caller has not released; "
                                         "release batches sooner or raise prefetch");
      }
      // Checked only where next() would wait: a worker that is stopped (SIGSTOP) or
      // stuck must not hold up a Ctrl-C. The signal also cuts the wait's poll() short.
      if (interrupted_.exchange(false, std::memory_order_relaxed)) {
        return Status::Cancelled("interrupted while waiting for batch " + std::to_string(pass_.position()) +
                               " (Loader::interrupt); the pass is unchanged and next() goes on with it");
      }
      handle_events(kEventWait);
    }
  }

  void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }

  // The rules are PassPosition's.
  void set_epoch(std::uint64_t epoch) {
    if (auto seek = pass_.on_set_epoch(epoch)) begin_pass(*seek);
  }
  void reset() {
    if (auto seek = pass_.on_reset()) begin_pass(*seek);
  }

  std::string state() const {
    const PassPosition::Seek at = pass_.resume_point();
    return encode_checkpoint(Checkpoint{at.epoch, at.position, key_});
  }

  // Where a state() of this loader's order starts, checked against it.
  Result<PassPosition::Seek> parse_state(std::string_view state) const {
    auto checkpoint = decode_checkpoint(state, key_);
    if (!checkpoint.ok()) return checkpoint.status();
    return PassPosition::start_of(*checkpoint, sampler_.batches_per_epoch());
  }

  Status load_state(std::string_view state) {
    auto seek = parse_state(state);
    if (!seek.ok()) return seek.status();
    return go_to(*seek);
  }

  // For LoaderInternals: load_state() and state() without the JSON between.
  Status seek(PassPosition::Seek to) {
    auto seek = PassPosition::start_of(Checkpoint{to.epoch, to.position, key_}, sampler_.batches_per_epoch());
    if (!seek.ok()) return seek.status();
    return go_to(*seek);
  }
  Status go_to(PassPosition::Seek seek) {
    if (pass_.at(seek)) {
      pass_.start(seek);  // already there (nothing delivered since): keep what is prefetched
    } else {
      begin_pass(seek);
    }
    return Status::Ok();
  }
  PassPosition::Seek resume_point() const { return pass_.resume_point(); }
  const OrderKey& key() const { return key_; }

  std::uint64_t epoch() const { return pass_.epoch(); }
  const Sampler& sampler() const { return sampler_; }
  const DatasetIndex& index() const { return index_; }
  LoaderStats stats() const {
    LoaderStats s = stats_;
    s.arena_bytes = arena_->size();
    s.slots = slot_count(options_);
    s.start_method = workers_->start_method();
    s.pinned = pinned_ && pinned_->pinned();
    return s;
  }
  Loader::SharedMemory shared_memory() const {
    return {arena_->fd(), arena_->slot_region().data() - arena_->control().slots.slots_offset, arena_->size()};
  }

 private:
  // Starts a pass at `position`: a new generation makes every task in flight stale;
  // their slots come back with their (discarded) completions.
  void begin_pass(PassPosition::Seek seek) {
    generation_ = arena_->control().generation.fetch_add(1, std::memory_order_acq_rel) + 1;
    pass_.start(seek);
    order_ = sampler_.epoch_order(seek.epoch);
    issued_ = seek.position;
    interrupted_.store(false, std::memory_order_relaxed);  // an interrupt is for the pass it cut short
    for (const auto& [id, c] : ready_) slots_->give_back(c.slot);
    ready_.clear();
  }

  std::size_t in_flight() const {
    std::size_t n = 0;
    for (const auto& tasks : outstanding_) n += tasks.size();
    return n;
  }

  // Hands out batches while there are free slots.
  void issue() {
    while (issued_ < sampler_.batches_per_epoch()) {
      auto slot = slots_->take();
      if (!slot) return;
      const auto samples = sampler_.batch(order_, issued_);
      submit(Task{generation_, pass_.epoch(), issued_, *slot, static_cast<std::uint32_t>(samples.size())});
      ++issued_;
    }
  }

  // The worker with the fewest outstanding tasks among those that are up (a replacement
  // still starting, or one that never starts, gets work only when no worker is up) and
  // not being killed for task_timeout.
  std::uint32_t least_loaded_worker() const {
    auto pick = [&](auto eligible) {
      std::optional<std::uint32_t> best;
      for (std::uint32_t w = 0; w < outstanding_.size(); ++w) {
        if (eligible(w) && (!best || outstanding_[w].size() < outstanding_[*best].size())) best = w;
      }
      return best;
    };
    const auto up = [&](std::uint32_t w) { return !killed_[w] && arena_->channel(w).progress_ns.load() != 0; };
    if (auto w = pick(up)) return *w;
    if (auto w = pick([&](std::uint32_t w) { return !killed_[w]; })) return *w;
    return *pick([](std::uint32_t) { return true; });
  }

  // Fills the slot from the sampler (again, for a re-issued task: a dead worker may have
  // compacted it) and queues the task on the least loaded worker.
  //
  // Samples that killed a worker are never handed to one again: they are noted as
  // skipped (on_error=skip), or fail the batch by name (fail).
  void submit(Task task) {
    const SlotContents slot(*arena_, task.slot);
    task.count = slot.prepare(sampler_.batch(order_, task.batch_id), index_, poisoned_);
    if (slot.skipped() > 0 && options_.on_error == OnError::kFail) {
      ready_.emplace(task.batch_id, Completion{task.generation, task.batch_id, task.slot, TaskOutcome::kFailed});
      return;
    }
    const std::uint32_t worker = least_loaded_worker();
    WorkerChannel& channel = arena_->channel(worker);
    if (!channel.tasks.try_push(task)) {  // validate() makes every slot fit in one ring
      slots_->give_back(task.slot);
      broken_ = Status::Internal("task ring of worker " + std::to_string(worker) + " is full");
      return;
    }
    outstanding_[worker].push_back(Issued{task, monotonic_ns()});
    futex_ring(&channel.task_bell);
  }

  // Waits up to `wait` for a completion or a death, then takes in completions, replaces
  // dead workers and kills stuck ones.
  void handle_events(std::chrono::milliseconds wait) {
    const WorkerPool::Events events = workers_->wait(wait);
    drain();  // also picks up what dying workers finished before they died
    for (std::uint32_t w : events.exited) replace_worker(w);
    if (options_.task_timeout_ms > 0) kill_stuck_workers();
  }

  // A worker with work to do that showed no progress (no sample begun, no task
  // finished, since it was given work) for task_timeout is killed, then replaced.
  void kill_stuck_workers() {
    const std::uint64_t now = monotonic_ns(), limit = std::uint64_t{options_.task_timeout_ms} * 1'000'000;
    for (std::uint32_t w = 0; w < outstanding_.size(); ++w) {
      if (outstanding_[w].empty() || killed_[w]) continue;
      // Its oldest task cannot have started before it was submitted. A worker that has
      // not started yet (exec, attach) gets a start-up allowance instead, but not forever.
      const std::uint64_t last = arena_->channel(w).progress_ns.load();
      const std::uint64_t progress = std::max(outstanding_[w].front().submitted_ns, last);
      const std::uint64_t allowed = last == 0 ? std::max(limit, kStartupAllowanceNs) : limit;
      if (now - std::min(progress, now) > allowed) {
        log_->warn("worker {} (pid {}) {} for over {} ms (task_timeout); killing it", w, workers_->pid(w),
                   last == 0 ? "did not start" : "made no progress", allowed / 1'000'000);
        workers_->kill(w);
        killed_[w] = true;
      }
    }
  }

  void drain() {
    for (std::uint32_t w = 0; w < outstanding_.size(); ++w) {
      while (auto c = arena_->channel(w).completions.try_pop()) {
        // A worker runs its tasks in order, so its completions come in order.
        outstanding_[w].pop_front();
        if (c->generation == generation_ && c->outcome != TaskOutcome::kCancelled) {
          ready_.emplace(c->batch_id, *c);
        } else {
          slots_->give_back(c->slot);  // stale: a reset overtook it
        }
      }
    }
  }

  // A worker exited: rebuild its channel, start a replacement, and issue its unfinished
  // tasks again (those of the current pass; the slots of stale ones go back).
  void replace_worker(std::uint32_t w) {
    const ExitInfo exit = workers_->exit_info(w);
    const Status start_failure = workers_->start_failure(w);  // reads its channel: before it is rebuilt
    // The file is to blame if the worker crashed decoding it — not if it was killed (the
    // OOM killer, an operator, task_timeout: a stopped or starved worker) in the middle.
    const std::uint64_t culprit = exit.crashed() ? arena_->channel(w).current_sample.load() : kNoSample;
    const bool timed_out = killed_[w];
    std::deque<Issued> unfinished = std::move(outstanding_[w]);
    outstanding_[w].clear();
    killed_[w] = false;
    new (&arena_->channel(w)) WorkerChannel();
    const std::string who = "worker " + std::to_string(w) + " (pid " + std::to_string(workers_->pid(w)) + ") " +
                            (timed_out ? "was killed after task_timeout" : exit.describe());
    if (!start_failure.ok()) {
      broken_ = start_failure;
    } else if (++stats_.worker_restarts > options_.max_worker_restarts) {
      broken_ = Status::WorkerDied(who + "; that is " + std::to_string(stats_.worker_restarts) +
                                   " worker deaths, over max_worker_restarts " +
                                   std::to_string(options_.max_worker_restarts) +
                                   "; look for the cause in the log, then recreate the Loader");
    } else if (Status s = workers_->replace(w); !s.ok()) {
      broken_ = Status::WorkerDied(who + " and could not be replaced: " + s.message());
    } else {
      log_->warn("{}; replaced it and re-issued its {} unfinished batch(es)", who, unfinished.size());
    }
    if (culprit != kNoSample) {
      const std::string path = printable(index_.path(culprit));
      log_->error("{} died while decoding {}; it is treated as a bad file from now on", who, path);
      poisoned_.emplace(culprit, "a worker died decoding it (" + exit.describe() + ")");
    }
    for (const Issued& i : unfinished) {
      if (i.task.generation == generation_ && broken_.ok()) {
        submit(i.task);
      } else {
        slots_->give_back(i.task.slot);
      }
    }
  }

  Result<std::optional<Batch>> deliver(const Completion& c) {
    const std::uint64_t index = pass_.position();
    pass_.delivered(pass_.epoch(), index);  // the position moves on delivery only
    const SlotContents slot(*arena_, c.slot);
    // A worker that fails a batch notes the culprit first; the checks catch a slot that
    // breaks the layout rule, which would be a bug of ours, never bad data.
    if (c.outcome == TaskOutcome::kFailed && slot.skipped() > 0) {
      const std::uint32_t culprit = slot.skipped() - 1;
      Status s = Status::BadData(printable(slot.skip_reason(culprit)))
                     .about(printable(index_.path(slot.skipped_index(culprit))) +
                            " (on_error=fail; use skip to leave such files out)");
      slots_->give_back(c.slot);
      return s;
    }
    if (c.outcome != TaskOutcome::kDone || !slot.complete()) {
      slots_->give_back(c.slot);
      broken_ = Status::Internal("batch " + std::to_string(index) +
                                 " came back with samples neither written nor skipped; this is a forkfeed bug, "
                                 "please report it with the log");
      broken_reported_ = true;
      return broken_;
    }
    report_skipped(slot);
    const std::uint32_t count = slot.written();
    if (count == 0) {
      slots_->give_back(c.slot);
      return std::optional<Batch>();
    }
    stats_.delivered_batches += 1;
    stats_.delivered_samples += count;
    auto lease = std::make_unique<detail::PoolSlotLease>(arena_, slots_, c.slot);
    return std::optional<Batch>(BatchFactory::make(*arena_, c.slot, count, pass_.epoch(), index, std::move(lease)));
  }

  // Counts the samples left out (OnError::kSkip) and logs each file once, with why.
  void report_skipped(const SlotContents& slot) {
    for (std::uint32_t k = 0; k < slot.skipped(); ++k) {
      ++stats_.skipped_samples;
      const std::uint64_t sample = slot.skipped_index(k);
      if (logged_bad_.insert(sample).second) {
        log_->warn("skipped {}: {}", printable(index_.path(sample)), printable(slot.skip_reason(k)));
      }
    }
  }

  LoaderOptions options_;
  DatasetIndex index_;
  Sampler sampler_;
  OrderKey key_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<Arena> arena_;
  std::optional<PinnedRegistration> pinned_;  // after arena_: unpinned before it may unmap
  std::shared_ptr<SlotPool> slots_;
  std::unique_ptr<WorkerPool> workers_;
  struct Issued {
    Task task;
    std::uint64_t submitted_ns;
  };
  std::vector<std::deque<Issued>> outstanding_;  // per worker: issued, not yet completed
  std::vector<bool> killed_;                   // per worker: killed for task_timeout, not yet replaced
  std::unordered_set<std::uint64_t> logged_bad_;
  // Samples a worker died decoding, with the reason; never decoded again.
  std::unordered_map<std::uint64_t, std::string> poisoned_;

  // The current pass.
  std::uint64_t generation_ = 0;
  PassPosition pass_;  // epoch and batches handed to the caller
  std::vector<std::uint64_t> order_;
  std::uint64_t issued_ = 0;  // batches handed to workers
  std::map<std::uint64_t, Completion> ready_;  // finished, waiting for their turn
  Status broken_;
  bool broken_reported_ = false;
  LoaderStats stats_;
  // Set by interrupt(), perhaps from a signal handler: lock-free, so async-signal-safe.
  std::atomic<bool> interrupted_ = false;
  static_assert(std::atomic<bool>::is_always_lock_free);
};

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options) { return open(options, {}); }

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options, std::string_view state) {
  if (Status s = validate(options); !s.ok()) return s;
  if (Status s = set_log_level(options.log_level); !s.ok()) return s;
  // Absolute paths: the same dataset gives the same index (and state) from any cwd.
  auto absolute = [](const std::string& p) {
    std::error_code ec;
    const auto a = std::filesystem::absolute(p, ec);
    return ec ? p : a.lexically_normal().string();
  };
  auto index = options.image_folder.empty() ? DatasetIndex::from_manifest(absolute(options.manifest))
                                            : DatasetIndex::from_image_folder(absolute(options.image_folder));
  if (!index.ok()) return index.status();
  auto impl = std::make_unique<Impl>(options, std::move(index).value());
  if (impl->sampler().batches_per_epoch() == 0) {
    return Status::InvalidArgument("no batch to deliver: " + std::to_string(impl->sampler().samples_per_epoch()) +
                                   " samples per rank and batch size " + std::to_string(options.batch_size) +
                                   " with drop_last");
  }
  PassPosition::Seek from{options.epoch, 0};
  if (!state.empty()) {  // checked before any process or shared memory exists
    auto seek = impl->parse_state(state);
    if (!seek.ok()) return seek.status();
    from = *seek;
  }
  if (Status s = impl->start(from); !s.ok()) return s;
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

Result<std::optional<Batch>> Loader::next() { return impl_->next(); }
void Loader::interrupt() { impl_->interrupt(); }
void Loader::set_epoch(std::uint64_t epoch) { impl_->set_epoch(epoch); }
void Loader::reset() { impl_->reset(); }
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

Loader::Iterator Loader::begin() {
  impl_->reset();  // a new range-for is a new pass
  return Iterator(this);
}

}  // namespace forkfeed
