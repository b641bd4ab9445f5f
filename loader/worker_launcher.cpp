// The fork start method.
#include "loader/worker_launcher.h"

namespace forkfeed {
namespace {

class ForkLauncher final : public WorkerLauncher {
 public:
  const char* name() const override { return "fork"; }
  Result<ChildProcess> launch(const Arena& arena, const WorkerIdentity& who) override {
    return ChildProcess::fork([&arena, who] { return run_worker(arena, who); });
  }
};

}  // namespace

std::unique_ptr<WorkerLauncher> make_fork_launcher() { return std::make_unique<ForkLauncher>(); }

}  // namespace forkfeed
