// The body of a worker process: serve the loaders attached to its pool — take their
// tasks from this worker's ring in each loader's arena, fairly, decode their samples into
// the loaders' batch slots, report completions — until told to stop or orphaned.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "transport/pool_memory.h"

namespace forkfeed {

struct WorkerIdentity {
  std::uint32_t id;
  std::uint64_t incarnation;  // which life of worker `id` this is: it serves channels set to it
  pid_t parent;               // the worker exits as soon as this process is gone
  int log_level;              // spdlog level
  int socket;                 // the worker's end of its pool socket (PoolMessage)
};

// A worker that could not go on (out of memory outside a sample, say) exits with this,
// having said why on stderr; the pool replaces it, blaming no sample.
inline constexpr int kWorkerFailedExitCode = 3;

// Returns the process exit code: 0 when told to stop, 1 when orphaned.
int run_worker(const PoolMemory& pool, const WorkerIdentity& who);

}  // namespace forkfeed
