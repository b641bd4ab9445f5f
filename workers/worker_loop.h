// The body of a worker process: take tasks from this worker's ring, decode their
// samples into the batch slots, report completions, until told to stop or orphaned.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "transport/arena.h"

namespace forkfeed {

struct WorkerIdentity {
  std::uint32_t id;
  pid_t parent;       // the worker exits as soon as this process is gone
  int log_level;      // spdlog level
  int completion_fd;  // eventfd the orchestrator polls: written after each completion
};

// A worker that could not go on (out of memory outside a sample, say) exits with this,
// having said why on stderr; the orchestrator replaces it, blaming no sample.
inline constexpr int kWorkerFailedExitCode = 3;

// Returns the process exit code: 0 when told to stop, 1 when orphaned.
int run_worker(const Arena& arena, const WorkerIdentity& who);

}  // namespace forkfeed
