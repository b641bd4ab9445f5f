// Choosing how to start workers: the fork-safety assessment against the options.
#pragma once

#include <memory>
#include <string>

#include "forkfeed/fork_safety.h"
#include "forkfeed/options.h"
#include "process/worker_launcher.h"

namespace forkfeed {

struct StartDecision {
  std::unique_ptr<WorkerLauncher> launcher;
  std::string why;      // for the log line that says which method and why
  std::string warning;  // non-empty: fork despite a hazard, with fork_hazard=warn
};

// auto: fork when `report` is clean, else spawn. fork with a hazard: refused with
// fork_hazard=error, warned about with warn, silent with ignore. spawn: spawn.
Result<StartDecision> choose_start_method(StartMethod method, ForkHazardPolicy fork_hazard,
                                          const ForkReport& report);

}  // namespace forkfeed
