// The worker task loop. Nothing here takes a lock in shared memory: a worker killed at
// any instruction leaves at most a half-written slot, which its loader owns. Which
// loader's task comes next is FairShare's to say, asked between samples: a task whose
// loader's turn is over is set aside part-way and resumed later, so that one loader's
// long tasks hold the worker for a slice, not for a whole batch.
#include "workers/worker_loop.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <opencv2/core/utility.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "base/monotonic_clock.h"
#include "base/printable.h"
#include "transport/arena.h"
#include "transport/futex.h"
#include "transport/pool_message.h"
#include "transport/slot_contents.h"
#include "workers/fair_share.h"
#include "workers/opencv_logging.h"
#include "workers/sample_fields.h"
#include "workers/sample_pipeline.h"

namespace forkfeed {
namespace {

constexpr auto kIdleWait = std::chrono::milliseconds(100);

// One loader attached to the pool, as this worker sees it.
struct Tenant {
  Tenant(std::uint64_t id, std::shared_ptr<Arena> arena, UniqueFd completions, std::uint32_t w)
      : id(id),
        arena(std::move(arena)),
        completions(std::move(completions)),
        channel(this->arena->channel(w)),
        pipeline(this->arena->control().transform) {
    if (this->arena->control().fields.count > 0) {
      fields = std::make_unique<SampleFields>(this->arena->control(), DecodePath::kFused);
    }
  }
  std::uint64_t id;
  std::shared_ptr<Arena> arena;          // mapped while attached
  UniqueFd completions;                  // the loader's eventfd, written after each completion
  WorkerChannel& channel;                // this worker's rings in the loader's arena
  SamplePipeline pipeline;               // the loader's transform
  std::unique_ptr<SampleFields> fields;  // with a schema: every field of a sample, by it
  std::uint64_t sample_ns = 0;           // what its samples take here, of late (a moving average)
  // The task taken from `channel` and not finished, set aside between samples when
  // another loader's turn came. It is resumed before this loader's next task is taken, so
  // its loader gets this worker's completions in the order it issued the tasks; its
  // progress is in the slot itself. Should this worker die, the loader's ledger still
  // holds it (not completed) and issues it again, as any task in a dead worker's hands.
  struct InHand {
    Task task;
    std::uint32_t next = 0;        // its next sample
    std::uint64_t started_ns = 0;  // when it was taken
    std::uint64_t worker_ns = 0;   // worker time spent on it so far
  };
  std::optional<InHand> in_hand;
};

class Worker {
 public:
  Worker(const PoolMemory& pool, const WorkerIdentity& who)
      : pool_(pool),
        state_(pool.worker(who.id)),
        who_(who),
        // A logger of its own, made after fork: nothing shared with the parent's.
        log_(std::make_shared<spdlog::logger>("forkfeed.worker" + std::to_string(who.id),
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>())) {
    log_->set_level(static_cast<spdlog::level::level_enum>(who.log_level));
    // One worker is one core: OpenCV's own thread pool would oversubscribe the
    // machine (and its threads do not survive fork anyway).
    cv::setNumThreads(1);
    follow_log_level_in_opencv(who.log_level);
  }

  int run() {
    log_->debug("worker {} started, pid {}", who_.id, ::getpid());
    state_.progress_ns.store(monotonic_ns(), std::memory_order_relaxed);  // "up": task_timeout applies
    while (!stopping()) {
      const std::uint32_t bell = state_.bell.load(std::memory_order_acquire);
      if (const std::uint32_t sent = state_.messages.load(std::memory_order_acquire);
          sent != messages_read_) {
        if (!read_messages()) return 1;
        messages_read_ = sent;
      }
      give_back_stale_tasks();
      if (Tenant* t = next_tenant()) {
        serve(*t);
        continue;
      }
      if (orphaned()) {
        log_->warn("worker {}: the loader process is gone; exiting", who_.id);
        return 1;
      }
      futex_wait(&state_.bell, bell, kIdleWait);
    }
    log_->debug("worker {} stopping", who_.id);
    return 0;
  }

 private:
  bool orphaned() const { return ::getppid() != who_.parent; }
  bool stopping() const { return pool_.block().stop.load(std::memory_order_acquire) != 0; }
  static bool stale(const Tenant& t, const Task& task) {
    return t.arena->control().generation.load(std::memory_order_acquire) != task.generation;
  }
  bool serves(const Tenant& t) const {
    return t.channel.incarnation.load(std::memory_order_acquire) == who_.incarnation;
  }

  // Attaches and detaches loaders as the pool said. False when the pool is gone.
  bool read_messages() {
    while (true) {
      auto received = receive_pool_message(who_.socket);
      if (!received.ok()) {
        log_->warn("worker {}: {}; exiting", who_.id, received.status().message());
        return false;
      }
      if (!received->has_value()) return true;
      ReceivedPoolMessage& m = **received;
      std::erase_if(tenants_, [&](const auto& t) { return t->id == m.message.loader; });  // unmaps its arena
      share_.remove(m.message.loader);
      if (m.message.kind != PoolMessage::Kind::kAttach) continue;
      auto arena = Arena::attach(std::move(m.arena));
      if (!arena.ok() || arena.value()->control().num_workers <= who_.id) {
        // A loader's arena that this worker cannot serve: its tasks wait until the loader's
        // task_timeout, which names this worker; the other loaders go on.
        log_->error(
            "worker {}: cannot map the arena of loader {}: {}", who_.id, m.message.loader,
            arena.ok() ? "it has fewer channels than the pool has workers" : arena.status().message());
        continue;
      }
      share_.add(m.message.loader, (*arena)->control().weight);
      tenants_.push_back(std::make_unique<Tenant>(m.message.loader, std::move(arena).value(),
                                                  std::move(m.completions), who_.id));
    }
  }

  Tenant* tenant(std::uint64_t id) const {
    for (const auto& t : tenants_) {
      if (t->id == id) return t.get();
    }
    return nullptr;
  }
  // The loader to serve next, of those with work for this worker (a task set aside, or one
  // queued in a channel handed to it).
  std::optional<std::uint64_t> next_loader() {
    const std::uint64_t now = monotonic_ns();
    return share_.next(
        [&](std::uint64_t id) {
          const Tenant* t = tenant(id);
          return serves(*t) && (t->in_hand.has_value() || t->channel.tasks.size() > 0);
        },
        [&](std::uint64_t id) { return served(*tenant(id), now); });
  }
  // The worker time the pool has spent on `t` by `now`: what every worker added up in its
  // channel, and the samples of `t` in other workers' hands, each for what it should take
  // (one of a costly pipeline is hundreds of milliseconds: while another worker has it,
  // this one serves the other loaders).
  std::uint64_t served(const Tenant& t, std::uint64_t now) const {
    std::uint64_t ns = 0;
    for (std::uint32_t w = 0; w < pool_.workers(); ++w) {
      ns += t.arena->channel(w).worker_ns.load(std::memory_order_relaxed);
      const WorkerState& other = pool_.worker(w);
      if (other.current_sample.load(std::memory_order_acquire) != kNoSample &&
          other.current_loader.load(std::memory_order_relaxed) == t.id) {
        const std::uint64_t elapsed = now - std::min(now, other.progress_ns.load(std::memory_order_relaxed));
        ns += std::max(elapsed, other.sample_expected_ns.load(std::memory_order_relaxed));
      }
    }
    return ns;
  }
  Tenant* next_tenant() {
    const auto chosen = next_loader();
    return chosen ? tenant(*chosen) : nullptr;
  }
  // Between samples of `t`'s task: whether to set it aside, because another loader's turn
  // came or the pool sent a message (a loader attached: it is served from now on).
  bool turn_over(const Tenant& t) {
    if (state_.messages.load(std::memory_order_acquire) != messages_read_) return true;
    return next_loader() != t.id;
  }

  // A task set aside whose loader has moved to a new generation goes back at once,
  // cancelled: its loader wants its slot now, not when its turn comes.
  void give_back_stale_tasks() {
    for (const auto& t : tenants_) {
      if (t->in_hand && serves(*t) && stale(*t, t->in_hand->task)) finish(*t, TaskOutcome::kCancelled);
    }
  }

  // Works on `t`'s task in hand, or its next one, until it is done or set aside.
  void serve(Tenant& t) {
    if (!t.in_hand) {
      const auto task = t.channel.tasks.try_pop();
      if (!task) return;
      t.in_hand = Tenant::InHand{*task, 0, monotonic_ns(), 0};
    }
    if (const std::optional<TaskOutcome> outcome = execute(t, *t.in_hand)) finish(t, *outcome);
  }

  void finish(Tenant& t, TaskOutcome outcome) {
    const Tenant::InHand& h = *t.in_hand;
    complete(t, Completion{h.task.generation, h.task.batch_id, h.task.slot, outcome, h.started_ns,
                           monotonic_ns(), h.worker_ns});
    t.in_hand.reset();
  }

  // The task's outcome, or nullopt when it was set aside for another loader's turn. Each
  // stretch of work is added to the loader's worker time in its channel as it goes, so
  // that FairShare, asked between samples, knows what each loader has had.
  std::optional<TaskOutcome> execute(Tenant& t, Tenant::InHand& h) {
    const SlotContents slot(*t.arena, h.task.slot);
    const ControlBlock& control = t.arena->control();
    std::uint64_t since = monotonic_ns();
    const auto charge = [&] {
      const std::uint64_t now = monotonic_ns();
      h.worker_ns += now - since;
      t.channel.worker_ns.fetch_add(now - since, std::memory_order_relaxed);
      since = now;
    };
    for (bool first = true; h.next < h.task.count; first = false) {
      // Checked between samples: a reset cancels the rest of a stale batch.
      if (stale(t, h.task) || stopping() || orphaned()) {
        charge();
        return TaskOutcome::kCancelled;
      }
      if (!first) {
        charge();
        if (turn_over(t)) return std::nullopt;
      }
      const std::uint32_t i = h.next++;
      const std::uint64_t index = slot.sample(i);
      const SampleSource source = t.arena->index().source(index);
      const std::uint64_t begun = monotonic_ns();
      state_.progress_ns.store(begun, std::memory_order_relaxed);
      state_.sample_expected_ns.store(t.sample_ns, std::memory_order_relaxed);
      state_.current_loader.store(t.id, std::memory_order_relaxed);
      state_.current_sample.store(index, std::memory_order_release);
      const Status s = t.fields ? t.fields->run(t.arena->index(), h.task.epoch, index, slot)
                                : t.pipeline.run(source, h.task.epoch, index, slot.next_pixels());
      state_.current_sample.store(kNoSample, std::memory_order_relaxed);
      state_.current_loader.store(kNoLoader, std::memory_order_relaxed);
      const std::uint64_t took = monotonic_ns() - begun;
      t.sample_ns = t.sample_ns == 0 ? took : (t.sample_ns * 3 + took) / 4;
      if (s.ok()) {
        if (t.fields && t.fields->dropped_boxes() > 0)
          t.channel.dropped_boxes.fetch_add(t.fields->dropped_boxes(), std::memory_order_relaxed);
        slot.keep(i);
        continue;
      }
      log_->debug("worker {}: {}", who_.id, s.about(printable(source.file)).message());
      slot.skip(i, s);  // the loader reports it, naming the sample
      // on_error decides for bad data only. Any other failure (out of fds or memory, an
      // I/O error, a shard changed since it was indexed) says nothing against the
      // sample: skipping it would lose a good sample, so the batch fails.
      if (control.on_error != OnError::kSkip || s.code() != Status::Code::kBadData) {
        charge();
        return TaskOutcome::kFailed;
      }
    }
    charge();
    return TaskOutcome::kDone;
  }

  void complete(Tenant& t, const Completion& c) {
    // The ring holds every slot, so it is never full for long; wait rather than drop.
    while (!t.channel.completions.try_push(c)) {
      if (stopping()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    state_.progress_ns.store(monotonic_ns(), std::memory_order_relaxed);
    const std::uint64_t one = 1;
    (void)!::write(t.completions.get(), &one, sizeof one);  // eventfd: never blocks, never short
  }

  const PoolMemory& pool_;
  WorkerState& state_;
  WorkerIdentity who_;
  std::uint32_t messages_read_ = 0;
  std::vector<std::unique_ptr<Tenant>> tenants_;
  FairShare share_;  // of tenants_, by id
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

int run_worker(const PoolMemory& pool, const WorkerIdentity& who) {
  // What escapes the loop (an allocation outside a sample's pipeline, say) ends the
  // worker with a code, not with std::terminate's SIGABRT: a crash would be pinned on
  // the sample in hand and make it bad data, though the sample is not to blame.
  try {
    return Worker(pool, who).run();
  } catch (const std::exception& e) {
    const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "forkfeed worker %u: %s; exiting\n", who.id,
                 memory ? "out of memory" : printable(e.what()).c_str());
    return kWorkerFailedExitCode;
  }
}

}  // namespace forkfeed
