// Loader: the orchestrator. What makes its batches is its BatchLine (the WorkerPool it is
// attached to, the arena, the Dispatcher, the Supervisor, Delivery); what it keeps itself
// is the pass: batches handed out in order, the position moving on delivery only
// (PassPosition), or, for a pass on demand, the batches wanted (PassDemand).
#include "forkfeed/loader.h"

#include <new>
#include <optional>

#include "base/logging.h"
#include "base/out_of_memory.h"
#include "base/owner_process.h"
#include "base/printable.h"
#include "dataset/dataset_source.h"
#include "loader/batch_line.h"
#include "loader/checkpoint.h"
#include "loader/loader_internals.h"
#include "loader/pass_demand.h"
#include "loader/pass_position.h"
#include "loader/pass_yield.h"
#include "loader/sampler.h"
#include "plan/stream_plan.h"

namespace forkfeed {

class Loader::Impl {
 public:
  // The way into a Loader's insides, for this file alone (LoaderInternals included).
  static Impl& of(const Loader& loader) { return *loader.impl_; }

  // REQUIRES: `options` resolved (StreamPlan).
  Impl(const LoaderOptions& options, DatasetIndex index)
      : index_(std::move(index)),
        sampler_(SamplerSpec{index_.size(), options.seed, options.rank, options.world_size,
                             options.batch_size, options.shuffle, options.drop_last}),
        key_(order_key(index_, options)),
        pass_(sampler_.batches_per_epoch(), {options.epoch, 0}) {}

  // What the fields add to the slots is charged to `budget`; null: memory_budget().
  static Result<std::unique_ptr<Loader>> open(const StreamPlan& plan, std::string_view state,
                                              std::shared_ptr<WorkerPool> pool, FieldBytesBudget budget = {});

  Status check_process() const {
    return owner_.check("Loader", "open a new Loader in this process (the parent's goes on unaffected)");
  }

  Result<std::optional<Batch>> next() {
    if (Status s = check_process(); !s.ok()) return s;
    if (line_->broken()) return line_->error();
    if (auto seek = pass_.on_next()) begin_pass(*seek);
    line_->poll();
    while (true) {
      if (pass_.complete()) {
        pass_.ended(pass_.epoch());
        if (Status s = yield_.at_end(pass_.epoch(), line_->counts()); !s.ok()) return s;
        return std::optional<Batch>();
      }
      const std::uint64_t index = pass_.position();
      auto batch = line_->take(pass_.epoch(), index, demand_ ? &*demand_ : nullptr);
      if (!line_->consumed(batch)) return batch;
      pass_.delivered(pass_.epoch(), index);  // the position moves on delivery only
      if (!batch.ok() || batch->has_value()) return batch;
      // every sample of that batch was skipped
    }
  }

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
  Result<PassPosition::Seek> parse_state(std::string_view state) const {
    return pass_.parse_state(state, key_, &index_);
  }
  // load_state() of `seek`, JSON or not.
  Status load(Result<PassPosition::Seek> seek) {
    if (Status s = check_process(); !s.ok()) return s;
    if (!seek.ok()) return seek.status();
    if (auto start = pass_.load(*seek)) begin_pass(*start);
    return Status::Ok();
  }

  // A pass on demand (LoaderInternals).
  Status begin_demand(std::uint64_t epoch) {
    if (Status s = check_process(); !s.ok()) return s;
    if (Status s = PassPosition::check_epoch(epoch, "epoch"); !s.ok()) return s;
    line_->begin_demand(epoch);
    pass_.start({epoch, 0});
    demand_.emplace(sampler_.batches_per_epoch());
    return Status::Ok();
  }
  Status want(std::uint64_t batch) {
    if (!demand_) return Status::FailedPrecondition("the pass is not on demand: seek it on demand first");
    return demand_->want(batch);
  }
  Result<LoaderInternals::Wanted> next_wanted() {
    if (Status s = check_process(); !s.ok()) return s;
    if (line_->broken()) return line_->error();
    const std::optional<std::uint64_t> index = demand_ ? demand_->to_deliver() : std::nullopt;
    if (!index) return Status::FailedPrecondition("no batch is wanted");
    line_->poll();
    auto batch = line_->take(pass_.epoch(), *index, &*demand_);
    if (!line_->consumed(batch)) return batch.status();
    demand_->delivered();
    return LoaderInternals::Wanted{*index, std::move(batch)};
  }

  LoaderStats stats() const {
    LoaderStats s;
    line_->count_into(s);
    s.skipped_samples += index_.skipped_samples();  // left out while indexing, once
    s.skipped_bytes = index_.skipped_bytes();
    return s;
  }

  OwnerProcess owner_;
  const DatasetIndex index_;
  const Sampler sampler_;
  const OrderKey key_;
  std::unique_ptr<BatchLine> line_;  // after what it reads: index_, sampler_
  // The current pass.
  PassPosition pass_;                 // epoch and batches handed to the caller; on demand, the epoch only
  PassYield yield_;                   // whether it gave the caller anything
  std::optional<PassDemand> demand_;  // a pass on demand (forkfeedd serving a fan-in client)

 private:
  // Starts a whole pass at `seek` in a new generation.
  void begin_pass(PassPosition::Seek seek) {
    line_->begin_pass(seek);
    demand_.reset();
    pass_.start(seek);
    yield_.start(seek.position, line_->counts());
  }
};

Result<std::unique_ptr<Loader>> Loader::Impl::open(const StreamPlan& plan, std::string_view state,
                                                   std::shared_ptr<WorkerPool> pool,
                                                   FieldBytesBudget budget) {
  const LoaderOptions& options = plan.options();
  if (Status s = set_log_level(options.log_level); !s.ok()) return s;
  auto index = open_dataset(options, plan.schema());  // names the index it was building if memory runs out
  if (!index.ok()) return index.status();
  // The rest allocates too (the order, the arena's copy of the index): a failure is an
  // error, and what was made so far (workers included) is undone by unwinding.
  try {
    auto impl = std::make_unique<Impl>(options, std::move(index).value());
    if (impl->sampler_.batches_per_epoch() == 0) {
      return Status::InvalidArgument(
          "no batch to deliver: " + std::to_string(impl->sampler_.samples_per_epoch()) +
          " samples per rank and batch size " + std::to_string(options.batch_size) + " with drop_last");
    }
    PassPosition::Seek from{options.epoch, 0};
    if (!state.empty()) {  // checked before any process or shared memory exists
      auto seek = impl->parse_state(state);
      if (!seek.ok()) return seek.status();
      from = *seek;
    }
    if (!budget) budget = memory_budget(options);
    auto line = BatchLine::open(plan, impl->index_, impl->sampler_, std::move(pool), budget, loader_logger());
    if (!line.ok()) return line.status();
    impl->line_ = std::move(line).value();
    impl->begin_pass(from);
    return std::unique_ptr<Loader>(new Loader(std::move(impl)));
  } catch (const std::bad_alloc&) {
    return out_of_memory("opening the loader of " + printable(DatasetSource::of(options).describe()));
  }
}

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options) {
  return open(options, {}, nullptr);
}

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options, std::string_view state) {
  return open(options, state, nullptr);
}

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options, std::shared_ptr<WorkerPool> pool) {
  return open(options, {}, std::move(pool));
}

Result<std::unique_ptr<Loader>> Loader::open(const LoaderOptions& options, std::string_view state,
                                             std::shared_ptr<WorkerPool> pool) {
  auto plan = StreamPlan::of(options);
  if (!plan.ok()) return plan.status();
  return Impl::open(*plan, state, std::move(pool));
}

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

Result<std::optional<Batch>> Loader::next() { return impl_->next(); }
void Loader::interrupt() { impl_->line_->interrupt(); }
Status Loader::set_epoch(std::uint64_t epoch) { return impl_->set_epoch(epoch); }
Status Loader::reset() { return impl_->reset(); }
Status Loader::check_process() const { return impl_->check_process(); }
std::string Loader::state() const { return impl_->pass_.state(impl_->key_); }
Status Loader::load_state(std::string_view state) { return impl_->load(impl_->parse_state(state)); }
std::uint64_t Loader::epoch() const { return impl_->pass_.epoch(); }
std::uint64_t Loader::batches_per_epoch() const { return impl_->sampler_.batches_per_epoch(); }
std::uint64_t Loader::samples_per_epoch() const { return impl_->sampler_.samples_per_epoch(); }
const DatasetIndex& Loader::dataset() const { return impl_->index_; }
LoaderStats Loader::stats() const { return impl_->stats(); }
Loader::SharedMemory Loader::shared_memory() const { return impl_->line_->shared_memory(); }

Loader::Iterator Loader::begin() {
  if (Status s = impl_->reset(); !s.ok()) throw Error(s);  // a new range-for is a new pass
  return Iterator(this);
}

// LoaderInternals: forkfeedd's view, through the same Impl.

Result<std::unique_ptr<Loader>> LoaderInternals::open(const StreamPlan& plan, std::string_view state,
                                                      std::shared_ptr<WorkerPool> pool,
                                                      FieldBytesBudget budget) {
  return Loader::Impl::open(plan, state, std::move(pool), std::move(budget));
}
PassPosition::Seek LoaderInternals::position(const Loader& loader) {
  return Loader::Impl::of(loader).pass_.resume_point();
}
const OrderKey& LoaderInternals::order_key(const Loader& loader) { return Loader::Impl::of(loader).key_; }
Status LoaderInternals::seek(Loader& loader, PassPosition::Seek to) {
  Loader::Impl& impl = Loader::Impl::of(loader);
  return impl.load(PassPosition::start_of(Checkpoint{to.epoch, to.position, impl.key_},
                                          impl.sampler_.batches_per_epoch()));
}
bool LoaderInternals::broken(const Loader& loader) { return Loader::Impl::of(loader).line_->broken(); }
void LoaderInternals::limit_in_flight(Loader& loader, std::uint32_t tasks) {
  Loader::Impl::of(loader).line_->limit_in_flight(tasks);
}

void LoaderInternals::lend_only(Loader& loader) { Loader::Impl::of(loader).line_->lend_only(); }
std::uint64_t LoaderInternals::worker_ns(const Loader& loader) {
  return Loader::Impl::of(loader).line_->worker_ns();
}
const SlotGeometry& LoaderInternals::slot_geometry(const Loader& loader) {
  return Loader::Impl::of(loader).line_->control().slots;
}
const SlotFields& LoaderInternals::slot_fields(const Loader& loader) {
  return Loader::Impl::of(loader).line_->control().fields;
}
Status LoaderInternals::begin_demand(Loader& loader, std::uint64_t epoch) {
  return Loader::Impl::of(loader).begin_demand(epoch);
}
Status LoaderInternals::want(Loader& loader, std::uint64_t batch) {
  return Loader::Impl::of(loader).want(batch);
}
std::size_t LoaderInternals::wanted(const Loader& loader) {
  const Loader::Impl& impl = Loader::Impl::of(loader);
  return impl.demand_ ? impl.demand_->waiting() : 0;
}
Result<LoaderInternals::Wanted> LoaderInternals::next_wanted(Loader& loader) {
  return Loader::Impl::of(loader).next_wanted();
}

}  // namespace forkfeed
