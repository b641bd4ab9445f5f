// choose_start_method: the fork-safety policy in one place.
#include "process/start_method.h"

namespace forkfeed {

Result<StartDecision> choose_start_method(StartMethod method, ForkHazardPolicy fork_hazard,
                                          const ForkReport& report) {
  const std::string found = report.summary();
  switch (method) {
    case StartMethod::kSpawn: return StartDecision{make_spawn_launcher(), "start_method=spawn; " + found, ""};
    case StartMethod::kAuto:
      if (report.hazardous()) return StartDecision{make_spawn_launcher(), "auto, not forking: " + found, ""};
      return StartDecision{make_fork_launcher(), "auto: " + found, ""};
    case StartMethod::kFork: break;
  }
  if (!report.hazardous() || fork_hazard == ForkHazardPolicy::kIgnore) {
    return StartDecision{make_fork_launcher(), "start_method=fork; " + found, ""};
  }
  if (fork_hazard == ForkHazardPolicy::kError) {
    return Status::InvalidArgument("refusing to fork workers (fork_hazard=error): " + report.describe());
  }
  return StartDecision{make_fork_launcher(), "start_method=fork despite: " + found, report.describe()};
}

}  // namespace forkfeed
