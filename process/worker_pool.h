// WorkerPool::Impl: the worker processes of a pool and the loaders attached to it.
// It starts the workers, tells each of them when a loader attaches (its arena and
// completion eventfd, over the worker's socket) or detaches, watches the workers
// through pidfds, replaces the dead at once (they serve other loaders too) and tells
// every attached loader of each death, with what it needs to settle its own tasks; it
// stops and reaps them all at the end. Several loaders' threads call it: a mutex
// guards what is not an atomic in the pool's shared memory.
//
// What a death means for a loader's tasks (re-issue, the restart budget, a culprit
// sample) is the loader's Supervisor's to decide; the pool only reports it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "base/owner_process.h"
#include "forkfeed/worker_pool.h"
#include "process/worker_launcher.h"
#include "transport/arena.h"
#include "transport/pool_message.h"

namespace forkfeed {

// One worker's death, as each loader attached at the time is told of it.
struct WorkerDeath {
  std::uint32_t worker;
  std::uint64_t incarnation;  // the life that ended
  pid_t pid;
  ExitInfo exit;
  // The sample it had in hand, and whose: kNoLoader/kNoSample between samples.
  std::uint64_t culprit_loader;
  std::uint64_t culprit_sample;
  // Not Ok when the worker could not start at all (it would fail the same way again) or
  // could not be replaced: the pool is short of a worker from now on.
  Status failure;
  // Killed by kill(): a loader saw it stuck past its task_timeout.
  bool timed_out = false;
};

class WorkerPool::Impl {
 public:
  // `first` starts the initial workers; `replacement` those that replace dead ones (this
  // process may have become unsafe to fork since). Starts `workers` workers; on failure
  // those started are stopped.
  static Result<std::unique_ptr<Impl>> start(std::uint32_t workers, std::unique_ptr<WorkerLauncher> first,
                                             std::unique_ptr<WorkerLauncher> replacement, int log_level);
  // Asks every worker to stop, waits a little, then kills and reaps the rest. In a process
  // other than the one that started them (a fork's child), only forgets them.
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // The way in from the public face, for the library (a Loader attaching to a pool).
  static Impl& of(const WorkerPool& pool) { return *pool.impl_; }

  std::uint32_t size() const { return memory_.workers(); }
  StartMethod start_method() const { return first_->method(); }
  std::uint32_t loaders() const;
  const PoolMemory& memory() const { return memory_; }
  WorkerState& state(std::uint32_t w) const { return memory_.worker(w); }

  // A loader's place in the pool, from attach() until destroyed: then the workers unmap
  // its arena, and its tasks still in their rings are never run.
  class Membership {
   public:
    Membership() = default;
    Membership(Membership&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), id_(std::exchange(other.id_, kNoLoader)) {}
    Membership& operator=(Membership&& other) noexcept;
    ~Membership();
    std::uint64_t id() const { return id_; }

   private:
    friend class Impl;
    Membership(Impl* pool, std::uint64_t id) : pool_(pool), id_(id) {}
    Impl* pool_ = nullptr;
    std::uint64_t id_ = kNoLoader;
  };
  // Attaches the loader of `arena` (one channel per worker of this pool), whose workers
  // write `completions` (an eventfd) after each completion: every channel is handed to
  // the worker's current life, and each worker maps the arena before it takes a task from
  // it. The pool keeps its own copies of both fds while the loader is attached. Fails in a process other than
  // the one that started the pool (a fork's child): its workers are the parent's.
  Result<Membership> attach(const Arena& arena, int completions);

  // Sleeps until `completions` is written (a task completed, or the pool reported a death
  // to this loader) or a worker exits, at most `timeout`. Dead workers are reaped and
  // replaced, and every attached loader is told (take_deaths).
  void wait(int completions, std::chrono::milliseconds timeout);
  // The deaths reported to `loader` since it last asked, in order.
  std::vector<WorkerDeath> take_deaths(std::uint64_t loader);
  // The life of worker `w` serving now (or being started, or, after a failure, none).
  std::uint64_t incarnation(std::uint32_t w) const;
  pid_t pid(std::uint32_t w) const;
  // SIGKILLs life `incarnation` of worker `w`, if it still is the one running (a loader
  // that saw it stuck past task_timeout); its death is reported like any other.
  void kill(std::uint32_t w, std::uint64_t incarnation);

 private:
  friend class WorkerPoolSeam;  // tests/testing/worker_pool_seam.h: what only tests read
  // Worker `w`'s place in the pool (not a batch slot): its life now, its socket and what
  // that socket had no room for yet.
  struct Place {
    LaunchedWorker worker;
    UniqueFd socket;                  // the pool's end of the worker's socket (non-blocking)
    std::deque<PoolMessage> backlog;  // not sent yet, in order; an attach and its detach cancel out
    std::uint64_t incarnation = 0;
    bool running = false;    // false after a failure: no process to watch
    bool timed_out = false;  // kill() was called on this life
  };
  struct Attached {
    std::uint64_t id;
    UniqueFd arena;  // the pool's copies, sent with each attach message
    UniqueFd completions;
    std::vector<WorkerDeath> deaths;  // not yet taken
  };
  Impl(PoolMemory memory, std::unique_ptr<WorkerLauncher> first, std::unique_ptr<WorkerLauncher> replacement,
       int log_level);
  // Starts life `incarnation` of worker `w` with `launcher` and sends it every attached
  // loader. REQUIRES: mu_ held (or no other thread yet).
  Status launch(std::uint32_t w, WorkerLauncher& launcher);
  // Reaps worker `w` if it exited, reports it and replaces it. REQUIRES: mu_ held.
  void reap(std::uint32_t w);
  // Why worker `w` could not start at all, or Ok: a spawned worker that exited 127, 126
  // or 2 before its first heartbeat would fail the same way again. Passes on what it wrote
  // to stderr before it started.
  Status start_failure(std::uint32_t w, const ExitInfo& exit);
  // Sends worker `w` a message, after those it has not had room for yet, and rings it.
  // Never waits for the worker: what its socket cannot take now is kept, in order, and
  // sent by a later send() or wait(). REQUIRES: mu_ held.
  void send(std::uint32_t w, const PoolMessage& message);
  // Sends what it can of worker `w`'s backlog. REQUIRES: mu_ held.
  void flush(std::uint32_t w);
  void detach(std::uint64_t id);
  void stop();

  PoolMemory memory_;
  std::unique_ptr<WorkerLauncher> first_;
  std::unique_ptr<WorkerLauncher> replacement_;
  int log_level_;
  OwnerProcess owner_;
  mutable std::mutex mu_;
  std::vector<Place> places_;
  std::vector<Attached> attached_;
  std::uint64_t next_loader_ = 1;
  // Processes replaced while another thread may still poll their pidfd: closed when no
  // thread is in wait().
  std::vector<LaunchedWorker> retired_;
  int waiting_ = 0;
};

}  // namespace forkfeed
