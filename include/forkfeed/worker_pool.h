// WorkerPool: decode worker processes that several Loaders share. Each Loader attached
// to a pool keeps everything that makes it exact (its arena, pass, generation, ledger,
// on_error, resume state); the pool's workers serve the attached loaders fairly — equal
// shares of worker time, taken sample by sample whatever their batch sizes and pipelines,
// and a share one loader leaves unused goes to the others (docs/python.md says how closely).
//
//   auto pool = forkfeed::WorkerPool::open({.workers = 8}).value_or_throw();
//   auto train = forkfeed::Loader::open(train_options, pool).value_or_throw();
//   auto val = forkfeed::Loader::open(val_options, pool).value_or_throw();
//
// A Loader opened without a pool makes its own, of options.workers workers. A Loader
// keeps its pool alive; the workers stop when the last owner lets go.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct PoolOptions {
  std::uint32_t workers = 0;  // 0: the number of CPUs this process may run on
  // How the workers start (fork, spawn or auto), and what fork does when this process is
  // unsafe to fork: as LoaderOptions' fields of the same names.
  StartMethod start_method = StartMethod::kAuto;
  ForkHazardPolicy fork_hazard = ForkHazardPolicy::kWarn;
  // spdlog level name of the workers' logs; empty: $FORKFEED_LOG_LEVEL, else "info".
  std::string log_level;
};

class WorkerPool {
 public:
  // Starts the workers (fork when this process is safe to fork, as a Loader would).
  static Result<std::shared_ptr<WorkerPool>> open(const PoolOptions& options = {});
  // Stops and reaps the workers. (The loaders attached keep the pool alive.)
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  std::uint32_t workers() const;
  // How the first workers started: kFork or kSpawn. Replacements are always spawned.
  StartMethod start_method() const;
  // Loaders attached now.
  std::uint32_t loaders() const;

  // The library's side (process/worker_pool.h): only what sees its definition reaches
  // a pool's workers.
  class Impl;

 private:
  explicit WorkerPool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace forkfeed
