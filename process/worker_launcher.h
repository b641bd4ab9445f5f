// WorkerLauncher: how a worker process comes to life — forked from this process, or
// spawned as a fresh forkfeed-worker executable that maps the pool's memfd.
#pragma once

#include <memory>
#include <string>

#include "process/child_process.h"
#include "transport/pool_memory.h"
#include "workers/worker_loop.h"

namespace forkfeed {

// A started worker process.
struct LaunchedWorker {
  ChildProcess process;
  // A spawned worker's executable; empty for a forked one.
  std::string executable;
  // A spawned worker writes to this pipe until it has started, then to this process's
  // stderr (kSpawnStderrFd): the read end holds what it said if it could not start.
  // Not valid for a forked worker.
  UniqueFd startup_stderr;
};

class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  virtual StartMethod method() const = 0;
  // Starts worker `who.id` of `pool`.
  virtual Result<LaunchedWorker> launch(const PoolMemory& pool, const WorkerIdentity& who) = 0;
};

// The child inherits the pool's mapping and runs the worker loop directly.
std::unique_ptr<WorkerLauncher> make_fork_launcher();
// posix_spawn of forkfeed-worker: found through $FORKFEED_WORKER, else next to
// libforkfeed (../bin or the same folder), else next to this executable.
std::unique_ptr<WorkerLauncher> make_spawn_launcher();

// The fds a spawned worker finds the pool's shared memory and its pool socket at.
inline constexpr int kSpawnPoolFd = 3;
inline constexpr int kSpawnSocketFd = 4;
// This process's stderr, which a spawned worker makes its own once it has started
// (until then its stderr is LaunchedWorker::startup_stderr).
inline constexpr int kSpawnStderrFd = 5;

}  // namespace forkfeed
