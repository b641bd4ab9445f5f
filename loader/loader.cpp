// Loader: the orchestrator. It delegates to the Sampler (what to read), the SlotPool
// (where to write it), the WorkerPool (who decodes), and the rings in the Arena (how
// work moves); what it keeps itself is the pass: what was issued, what came back, and
// what was delivered, in order.
#include "forkfeed/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "loader/batch_factory.h"
#include "loader/logging.h"
#include "loader/sampler.h"
#include "loader/slot_count.h"
#include "loader/worker_pool.h"
#include "transport/futex.h"
#include "workers/transform.h"

namespace forkfeed {
namespace {

constexpr auto kCompletionWait = std::chrono::milliseconds(100);

TransformSpec transform_spec(const LoaderOptions& o) {
  TransformSpec t{};
  t.kind = o.transform;
  t.dtype = o.dtype;
  t.size = o.size;
  std::copy(o.mean.begin(), o.mean.end(), t.mean);
  std::copy(o.std.begin(), o.std.end(), t.std);
  t.seed = o.seed;
  t.max_pixels = o.max_pixels;
  return t;
}

}  // namespace

class Loader::Impl {
 public:
  Impl(const LoaderOptions& options, DatasetIndex index)
      : options_(options),
        index_(std::move(index)),
        sampler_(SamplerSpec{index_.size(), options.seed, options.rank, options.world_size, options.batch_size,
                             options.shuffle, options.drop_last}),
        log_(loader_logger()) {}

  ~Impl() {
    if (workers_) workers_->stop();
  }

  Status start() {
    const std::uint32_t slots = slot_count(options_);
    auto arena = Arena::create(ArenaSpec{options_.workers, slots, options_.batch_size,
                                         sample_bytes(options_.dtype, options_.size), transform_spec(options_)},
                               index_);
    if (!arena.ok()) return arena.status();
    arena_ = std::move(arena).value();
    slots_ = std::make_shared<SlotPool>(slots);
    in_flight_.assign(options_.workers, 0);
    workers_ = std::make_unique<WorkerPool>(arena_, make_fork_launcher(), log_->level());
    if (Status s = workers_->start(); !s.ok()) return s;
    log_->info("started {} workers ({}); {} samples, {} batches of {} per epoch; arena {:.1f} MiB in {} slots",
               options_.workers, workers_->start_method(), sampler_.samples_per_epoch(),
               sampler_.batches_per_epoch(), options_.batch_size, arena_->size() / 1048576.0, slots);
    begin_pass(options_.epoch);
    return Status::Ok();
  }

  Result<std::optional<Batch>> next() {
    if (!broken_.ok()) return broken_;
    if (pass_over_) begin_pass(epoch_ + 1);
    while (true) {
      issue();
      if (!broken_.ok()) return broken_;
      if (delivered_ == sampler_.batches_per_epoch()) {
        pass_over_ = true;
        return std::optional<Batch>();
      }
      if (auto it = ready_.find(delivered_); it != ready_.end()) {
        const Completion c = it->second;
        ready_.erase(it);
        return deliver(c);
      }
      const bool nothing_in_flight = std::all_of(in_flight_.begin(), in_flight_.end(), [](auto n) { return n == 0; });
      if (nothing_in_flight && slots_->free_count() == 0) {
        return Status::ResourceExhausted("every batch slot is held by a Batch the caller has not released; "
                                         "release batches sooner or raise prefetch");
      }
      if (Status s = await_completions(); !s.ok()) return broken_ = s;
    }
  }

  void set_epoch(std::uint64_t epoch) { begin_pass(epoch); }
  void reset() {
    if (delivered_ > 0 || pass_over_) begin_pass(epoch_);
  }

  std::uint64_t epoch() const { return epoch_; }
  const Sampler& sampler() const { return sampler_; }
  const DatasetIndex& index() const { return index_; }
  LoaderStats stats() const {
    LoaderStats s = stats_;
    s.arena_bytes = arena_->size();
    s.slots = slot_count(options_);
    return s;
  }

 private:
  // Starts a pass: a new generation makes every task in flight stale; their slots
  // come back with their (discarded) completions.
  void begin_pass(std::uint64_t epoch) {
    generation_ = arena_->control().generation.fetch_add(1, std::memory_order_acq_rel) + 1;
    epoch_ = epoch;
    order_ = sampler_.epoch_order(epoch);
    issued_ = delivered_ = 0;
    pass_over_ = false;
    for (const auto& [id, c] : ready_) slots_->give_back(c.slot);
    ready_.clear();
    issue();
  }

  // Hands out batches while there are free slots, each to the least loaded worker.
  void issue() {
    while (issued_ < sampler_.batches_per_epoch()) {
      auto slot = slots_->take();
      if (!slot) return;
      const auto samples = sampler_.batch(order_, issued_);
      const SlotView view = arena_->slot(*slot);
      view.header->count = static_cast<std::uint32_t>(samples.size());
      for (std::size_t i = 0; i < samples.size(); ++i) {
        view.sample_indices[i] = samples[i];
        view.labels[i] = index_.label(samples[i]);
      }
      const auto worker = static_cast<std::uint32_t>(
          std::min_element(in_flight_.begin(), in_flight_.end()) - in_flight_.begin());
      const Task task{generation_, epoch_, issued_, *slot, static_cast<std::uint32_t>(samples.size())};
      WorkerChannel& channel = arena_->channel(worker);
      if (!channel.tasks.try_push(task)) {  // validate() makes every slot fit in one ring
        slots_->give_back(*slot);
        broken_ = Status::Internal("task ring of worker " + std::to_string(worker) + " is full");
        return;
      }
      futex_ring(&channel.task_bell);
      ++in_flight_[worker];
      ++issued_;
    }
  }

  // Moves completions from the rings into ready_, sleeping until one arrives; checks
  // the workers when none does.
  Status await_completions() {
    ControlBlock& control = arena_->control();
    const std::uint32_t bell = control.completion_bell.load(std::memory_order_acquire);
    if (drain() > 0) return Status::Ok();
    futex_wait(&control.completion_bell, bell, kCompletionWait);
    if (drain() > 0) return Status::Ok();
    return workers_->check();
  }

  std::size_t drain() {
    std::size_t n = 0;
    for (std::uint32_t w = 0; w < in_flight_.size(); ++w) {
      while (auto c = arena_->channel(w).completions.try_pop()) {
        --in_flight_[w];
        ++n;
        if (c->generation == generation_ && c->outcome != TaskOutcome::kCancelled) {
          ready_.emplace(c->batch_id, *c);
        } else {
          slots_->give_back(c->slot);  // stale: a reset overtook it
        }
      }
    }
    return n;
  }

  Result<std::optional<Batch>> deliver(const Completion& c) {
    const std::uint64_t index = delivered_++;  // the position moves on delivery only
    const SlotView view = arena_->slot(c.slot);
    if (c.outcome == TaskOutcome::kFailed) {
      Status s = Status::BadData(std::string(view.header->error));
      slots_->give_back(c.slot);
      return s;
    }
    stats_.delivered_batches += 1;
    stats_.delivered_samples += view.header->count;
    auto lease = std::make_unique<detail::SlotLease>(arena_, slots_, c.slot);
    return std::optional<Batch>(
        BatchFactory::make(*arena_, c.slot, view.header->count, epoch_, index, std::move(lease)));
  }

  LoaderOptions options_;
  DatasetIndex index_;
  Sampler sampler_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<Arena> arena_;
  std::shared_ptr<SlotPool> slots_;
  std::unique_ptr<WorkerPool> workers_;
  std::vector<std::uint32_t> in_flight_;  // tasks per worker not yet completed

  // The current pass.
  std::uint64_t generation_ = 0;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> order_;
  std::uint64_t issued_ = 0;     // batches handed to workers
  std::uint64_t delivered_ = 0;  // batches handed to the caller
  bool pass_over_ = false;
  std::map<std::uint64_t, Completion> ready_;  // finished, waiting for their turn
  Status broken_;
  LoaderStats stats_;
};

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options) {
  if (Status s = validate(options); !s.ok()) return s;
  if (Status s = set_log_level(options.log_level); !s.ok()) return s;
  auto index = options.image_folder.empty() ? DatasetIndex::from_manifest(options.manifest)
                                            : DatasetIndex::from_image_folder(options.image_folder);
  if (!index.ok()) return index.status();
  auto impl = std::make_unique<Impl>(options, std::move(index).value());
  if (impl->sampler().batches_per_epoch() == 0) {
    return Status::InvalidArgument("no batch to deliver: " + std::to_string(impl->sampler().samples_per_epoch()) +
                                   " samples per rank and batch size " + std::to_string(options.batch_size) +
                                   " with drop_last");
  }
  if (Status s = impl->start(); !s.ok()) return s;
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

Result<std::optional<Batch>> Loader::next() { return impl_->next(); }
void Loader::set_epoch(std::uint64_t epoch) { impl_->set_epoch(epoch); }
void Loader::reset() { impl_->reset(); }
std::uint64_t Loader::epoch() const { return impl_->epoch(); }
std::uint64_t Loader::batches_per_epoch() const { return impl_->sampler().batches_per_epoch(); }
std::uint64_t Loader::samples_per_epoch() const { return impl_->sampler().samples_per_epoch(); }
const DatasetIndex& Loader::dataset() const { return impl_->index(); }
LoaderStats Loader::stats() const { return impl_->stats(); }

Loader::Iterator Loader::begin() { return Iterator(this); }

Loader::Iterator& Loader::Iterator::operator++() {
  current_.reset();  // release the previous batch's slot before waiting for the next
  auto next = loader_->next();
  if (!next.ok()) throw Error(next.status());
  current_ = std::move(*next);
  return *this;
}

}  // namespace forkfeed
