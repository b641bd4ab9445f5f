// Dispatcher: the pass issued, submit, drain, re-issue.
#include "loader/dispatcher.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/monotonic_clock.h"
#include "transport/futex.h"
#include "transport/slot_contents.h"

namespace forkfeed {

Dispatcher::Dispatcher(std::shared_ptr<Arena> arena, std::shared_ptr<SlotPool> slots,
                       const DatasetIndex& index, OnError on_error, const WorkerHealth& health,
                       const PoolMemory& pool, std::uint64_t loader)
    : arena_(std::move(arena)),
      slots_(std::move(slots)),
      index_(index),
      on_error_(on_error),
      health_(health),
      pool_(pool),
      loader_(loader),
      spread_(static_cast<std::uint32_t>(loader % arena_->control().num_workers)),
      ledger_(arena_->control().num_workers) {}

void Dispatcher::begin_generation() {
  generation_ = arena_->control().generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  for (const auto& [id, c] : ready_) slots_->give_back(c.slot);
  ready_.clear();
}

void Dispatcher::start(const Sampler& sampler, std::uint64_t epoch) {
  begin_generation();
  sampler_ = &sampler;
  if (order_.empty() || epoch != epoch_) order_ = sampler.epoch_order(epoch);
  epoch_ = epoch;
}

void Dispatcher::begin_pass(const Sampler& sampler, PassPosition::Seek from) {
  start(sampler, from.epoch);
  issued_ = from.position;
}

void Dispatcher::begin_demand(const Sampler& sampler, std::uint64_t epoch) {
  start(sampler, epoch);
  issued_ = sampler.batches_per_epoch();  // nothing of the whole pass: the demand says what
}

std::optional<std::uint32_t> Dispatcher::free_slot() {
  if (in_flight_limit_ > 0 && in_flight() >= in_flight_limit_) return std::nullopt;
  return slots_->take();
}

Status Dispatcher::issue() {
  while (issued_ < sampler_->batches_per_epoch()) {
    const std::optional<std::uint32_t> slot = free_slot();
    if (!slot) break;
    const std::uint64_t batch = issued_++;
    if (Status s = submit(epoch_, batch, *slot, sampler_->batch(order_, batch)); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Dispatcher::issue(PassDemand& demand) {
  while (const std::optional<std::uint64_t> batch = demand.to_issue()) {
    const std::optional<std::uint32_t> slot = free_slot();
    if (!slot) break;
    demand.issued();
    if (Status s = submit(epoch_, *batch, *slot, sampler_->batch(order_, *batch)); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Dispatcher::submit(std::uint64_t epoch, std::uint64_t batch_id, std::uint32_t slot,
                          std::span<const std::uint64_t> samples) {
  return place(Task{generation_, epoch, batch_id, slot, 0}, {samples.begin(), samples.end()});
}

// Fills the slot and queues the task. A batch holding a sample that killed a worker
// fails here under on_error=fail: it is settled as a worker would settle it (the slot's
// last skip note names the sample), so delivery treats both alike. A sample left out
// for lacking a field (missing=skip) is skipped whatever on_error says.
Status Dispatcher::place(Task task, std::vector<std::uint64_t> samples) {
  const SlotContents slot(*arena_, task.slot);
  task.count = slot.prepare(samples, index_, health_.poisoned);
  const bool poisoned = std::any_of(samples.begin(), samples.end(),
                                    [&](std::uint64_t s) { return health_.poisoned.contains(s); });
  if (poisoned && on_error_ == OnError::kFail) {
    ready_.emplace(task.batch_id,
                   Completion{task.generation, task.batch_id, task.slot, TaskOutcome::kFailed});
    return Status::Ok();
  }
  const std::uint32_t worker = least_loaded_worker();
  WorkerChannel& channel = arena_->channel(worker);
  if (!channel.tasks.try_push(task)) {  // validate() makes every slot fit in one ring
    slots_->give_back(task.slot);
    return Status::Internal("task ring of worker " + std::to_string(worker) + " is full");
  }
  ledger_[worker].push_back(Issued{task, std::move(samples), monotonic_ns()});
  futex_ring(&pool_.worker(worker).bell);
  return Status::Ok();
}

// Whether `worker` is in the middle of another loader's sample that should go on for more
// than a turn (FairShare's slice): a task put behind it would wait for all of it — and
// hold its slot — while another worker could take it now. (Samples of a costly pipeline
// take hundreds of milliseconds.)
bool Dispatcher::held_by_another(std::uint32_t worker, std::uint64_t now) const {
  constexpr std::uint64_t kTurnNs = 10'000'000;
  const WorkerState& s = pool_.worker(worker);
  if (s.current_sample.load(std::memory_order_acquire) == kNoSample) return false;
  if (s.current_loader.load(std::memory_order_relaxed) == loader_) return false;
  const std::uint64_t elapsed = now - std::min(now, s.progress_ns.load(std::memory_order_relaxed));
  return s.sample_expected_ns.load(std::memory_order_relaxed) > elapsed + kTurnNs;
}

// The worker with the fewest of this loader's outstanding tasks among those that are up
// (a replacement still starting, or one that never starts, gets work only when no worker
// is up), not being killed for task_timeout, and not held by another loader's long sample.
std::uint32_t Dispatcher::least_loaded_worker() const {
  const auto n = static_cast<std::uint32_t>(ledger_.size());
  auto pick = [&](auto eligible) {
    std::optional<std::uint32_t> best;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t w = (spread_ + i) % n;
      if (eligible(w) && (!best || ledger_[w].size() < ledger_[*best].size())) best = w;
    }
    return best;
  };
  const auto up = [&](std::uint32_t w) {
    return !health_.killed[w] && pool_.worker(w).progress_ns.load() != 0;
  };
  const std::uint64_t now = monotonic_ns();
  if (auto w = pick([&](std::uint32_t w) { return up(w) && !held_by_another(w, now); })) return *w;
  if (auto w = pick(up)) return *w;
  if (auto w = pick([&](std::uint32_t w) { return !health_.killed[w]; })) return *w;
  return *pick([](std::uint32_t) { return true; });
}

void Dispatcher::drain() {
  for (std::uint32_t w = 0; w < ledger_.size(); ++w) {
    while (auto c = arena_->channel(w).completions.try_pop()) {
      // A worker runs its tasks in order, so its completions come in order.
      const std::uint64_t issued = ledger_[w].front().issued_ns;
      ledger_[w].pop_front();
      // Waiting is all of its time here that no worker spent on it: before a worker took
      // it, and while one had set it aside for other loaders.
      if (c->started_ns >= issued && c->finished_ns >= c->started_ns &&
          c->finished_ns - c->started_ns >= c->worker_ns) {
        wait_ns_ += c->finished_ns - issued - c->worker_ns;
      }
      if (c->generation == generation_ && c->outcome != TaskOutcome::kCancelled) {
        ready_.emplace(c->batch_id, *c);
      } else {
        slots_->give_back(c->slot);  // stale: a reset overtook it
      }
    }
  }
}

std::optional<Completion> Dispatcher::take(std::uint64_t batch_id) {
  auto it = ready_.find(batch_id);
  if (it == ready_.end()) return std::nullopt;
  const Completion c = it->second;
  ready_.erase(it);
  return c;
}

Status Dispatcher::reissue(std::uint32_t worker, bool resubmit) {
  std::deque<Issued> unfinished = std::exchange(ledger_[worker], {});
  Status status = Status::Ok();
  for (Issued& i : unfinished) {
    if (resubmit && status.ok() && i.task.generation == generation_) {
      status = place(i.task, std::move(i.samples));
    } else {
      slots_->give_back(i.task.slot);
    }
  }
  return status;
}

std::uint64_t Dispatcher::channel_sum(std::atomic<std::uint64_t> WorkerChannel::*count) const {
  std::uint64_t sum = 0;
  for (std::uint32_t w = 0; w < ledger_.size(); ++w)
    sum += (arena_->channel(w).*count).load(std::memory_order_relaxed);
  return sum;
}

std::size_t Dispatcher::in_flight() const {
  std::size_t n = 0;
  for (const auto& tasks : ledger_) n += tasks.size();
  return n;
}

std::optional<std::uint64_t> Dispatcher::oldest_issued_ns(std::uint32_t worker) const {
  if (ledger_[worker].empty()) return std::nullopt;
  return ledger_[worker].front().issued_ns;
}

}  // namespace forkfeed
