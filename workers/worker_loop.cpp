// The worker task loop. Nothing here takes a lock in shared memory: a worker killed at
// any instruction leaves at most a half-written slot, which the orchestrator owns.
#include "workers/worker_loop.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <opencv2/core/utility.hpp>
#include <thread>

#include "base/monotonic_clock.h"
#include "base/printable.h"
#include "transport/futex.h"
#include "transport/slot_contents.h"
#include "workers/opencv_logging.h"
#include "workers/sample_pipeline.h"

namespace forkfeed {
namespace {

constexpr auto kIdleWait = std::chrono::milliseconds(100);

class Worker {
 public:
  Worker(const Arena& arena, const WorkerIdentity& who)
      : arena_(arena),
        control_(arena.control()),
        channel_(arena.channel(who.id)),
        who_(who),
        pipeline_(control_.transform),
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
    channel_.progress_ns.store(monotonic_ns(), std::memory_order_relaxed);  // "up": task_timeout applies
    while (!stopping()) {
      const std::uint32_t bell = channel_.task_bell.load(std::memory_order_acquire);
      if (auto task = channel_.tasks.try_pop()) {
        complete(*task, execute(*task));
        continue;
      }
      if (orphaned()) {
        log_->warn("worker {}: the loader process is gone; exiting", who_.id);
        return 1;
      }
      futex_wait(&channel_.task_bell, bell, kIdleWait);
    }
    log_->debug("worker {} stopping", who_.id);
    return 0;
  }

 private:
  bool orphaned() const { return ::getppid() != who_.parent; }
  bool stopping() const { return control_.stop.load(std::memory_order_acquire) != 0; }
  bool stale(const Task& t) const { return control_.generation.load(std::memory_order_acquire) != t.generation; }

  TaskOutcome execute(const Task& task) {
    const SlotContents slot(arena_, task.slot);
    for (std::uint32_t i = 0; i < task.count; ++i) {
      // Checked between samples: a reset cancels the rest of a stale batch.
      if (stale(task) || stopping() || orphaned()) return TaskOutcome::kCancelled;
      const std::uint64_t index = slot.sample(i);
      const SampleSource source = arena_.index().source(index);
      channel_.progress_ns.store(monotonic_ns(), std::memory_order_relaxed);
      channel_.current_sample.store(index, std::memory_order_relaxed);
      const Status s = pipeline_.run(source, task.epoch, index, slot.next_pixels());
      channel_.current_sample.store(kNoSample, std::memory_order_relaxed);
      if (s.ok()) {
        slot.keep(i);
        continue;
      }
      log_->debug("worker {}: {}", who_.id, s.about(printable(source.file)).message());
      slot.skip(i, s);  // the orchestrator reports it, naming the sample
      // on_error decides for bad data only. Any other failure (out of fds or memory, an
      // I/O error, a shard changed since it was indexed) says nothing against the
      // sample: skipping it would lose a good sample, so the batch fails.
      if (control_.on_error != OnError::kSkip || s.code() != Status::Code::kBadData)
        return TaskOutcome::kFailed;
    }
    return TaskOutcome::kDone;
  }

  void complete(const Task& task, TaskOutcome outcome) {
    const Completion c{task.generation, task.batch_id, task.slot, outcome};
    // The ring holds every slot, so it is never full for long; wait rather than drop.
    while (!channel_.completions.try_push(c)) {
      if (stopping()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    channel_.progress_ns.store(monotonic_ns(), std::memory_order_relaxed);
    const std::uint64_t one = 1;
    (void)!::write(who_.completion_fd, &one, sizeof one);  // eventfd: never blocks, never short
  }

  const Arena& arena_;
  ControlBlock& control_;
  WorkerChannel& channel_;
  WorkerIdentity who_;
  SamplePipeline pipeline_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

int run_worker(const Arena& arena, const WorkerIdentity& who) {
  // What escapes the loop (an allocation outside a sample's pipeline, say) ends the
  // worker with a code, not with std::terminate's SIGABRT: a crash would be pinned on
  // the sample in hand and make it bad data, though the sample is not to blame.
  try {
    return Worker(arena, who).run();
  } catch (const std::exception& e) {
    const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "forkfeed worker %u: %s; exiting\n", who.id,
                 memory ? "out of memory" : printable(e.what()).c_str());
    return kWorkerFailedExitCode;
  }
}

}  // namespace forkfeed
