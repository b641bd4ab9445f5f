// The worker task loop. Nothing here takes a lock in shared memory: a worker killed at
// any instruction leaves at most a half-written slot, which its loader owns. Which
// loader's task comes next is FairShare's to say.
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
        pipeline(this->arena->control().transform) {}
  std::uint64_t id;
  std::shared_ptr<Arena> arena;  // mapped while attached
  UniqueFd completions;          // the loader's eventfd, written after each completion
  WorkerChannel& channel;        // this worker's rings in the loader's arena
  SamplePipeline pipeline;       // the loader's transform
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
      if (const std::uint32_t sent = state_.messages.load(std::memory_order_acquire); sent != messages_read_) {
        if (!read_messages()) return 1;
        messages_read_ = sent;
      }
      if (Tenant* t = next_tenant()) {
        if (auto task = t->channel.tasks.try_pop()) {
          const std::uint64_t started = monotonic_ns();
          const TaskOutcome outcome = execute(*t, *task);
          const std::uint64_t finished = monotonic_ns();
          share_.charge(t->id, finished - started);
          complete(*t, *task, outcome, started, finished);
        }
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
        log_->error("worker {}: cannot map the arena of loader {}: {}", who_.id, m.message.loader,
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
  // The loader to serve next, of those with a task for this worker in a channel handed to it.
  Tenant* next_tenant() {
    const auto chosen = share_.next([&](std::uint64_t id) {
      const Tenant* t = tenant(id);
      return serves(*t) && t->channel.tasks.size() > 0;
    });
    return chosen ? tenant(*chosen) : nullptr;
  }

  TaskOutcome execute(Tenant& t, const Task& task) {
    const SlotContents slot(*t.arena, task.slot);
    const ControlBlock& control = t.arena->control();
    for (std::uint32_t i = 0; i < task.count; ++i) {
      // Checked between samples: a reset cancels the rest of a stale batch.
      if (stale(t, task) || stopping() || orphaned()) return TaskOutcome::kCancelled;
      const std::uint64_t index = slot.sample(i);
      const SampleSource source = t.arena->index().source(index);
      state_.progress_ns.store(monotonic_ns(), std::memory_order_relaxed);
      state_.current_loader.store(t.id, std::memory_order_relaxed);
      state_.current_sample.store(index, std::memory_order_release);
      const Status s = t.pipeline.run(source, task.epoch, index, slot.next_pixels());
      state_.current_sample.store(kNoSample, std::memory_order_relaxed);
      state_.current_loader.store(kNoLoader, std::memory_order_relaxed);
      if (s.ok()) {
        slot.keep(i);
        continue;
      }
      log_->debug("worker {}: {}", who_.id, s.about(printable(source.file)).message());
      slot.skip(i, s);  // the loader reports it, naming the sample
      // on_error decides for bad data only. Any other failure (out of fds or memory, an
      // I/O error, a shard changed since it was indexed) says nothing against the
      // sample: skipping it would lose a good sample, so the batch fails.
      if (control.on_error != OnError::kSkip || s.code() != Status::Code::kBadData) return TaskOutcome::kFailed;
    }
    return TaskOutcome::kDone;
  }

  void complete(Tenant& t, const Task& task, TaskOutcome outcome, std::uint64_t started, std::uint64_t finished) {
    const Completion c{task.generation, task.batch_id, task.slot, outcome, started, finished};
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
