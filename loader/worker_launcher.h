// WorkerLauncher: how a worker process comes to life. Forking is the only method today;
// spawning a fresh forkfeed-worker executable plugs in here when the fork-safety guard
// needs it.
#pragma once

#include <memory>

#include "loader/child_process.h"
#include "transport/arena.h"
#include "workers/worker_loop.h"

namespace forkfeed {

class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  virtual const char* name() const = 0;
  // Starts worker `who.id` on `arena`.
  virtual Result<ChildProcess> launch(const Arena& arena, const WorkerIdentity& who) = 0;
};

// The child inherits the arena mapping and runs the worker loop directly.
std::unique_ptr<WorkerLauncher> make_fork_launcher();

}  // namespace forkfeed
