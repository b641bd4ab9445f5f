// WorkerHealth: what the Supervisor has learned about the workers that the Dispatcher
// must respect when it places work. The Supervisor alone writes it; the Dispatcher only
// reads it, so each fact has one owner and flows one way.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace forkfeed {

struct WorkerHealth {
  // Per worker: killed for task_timeout and not replaced yet; it gets no new work.
  std::vector<bool> killed;
  // Samples a worker died decoding, with the reason; never handed to a worker again.
  std::unordered_map<std::uint64_t, std::string> poisoned;
};

}  // namespace forkfeed
