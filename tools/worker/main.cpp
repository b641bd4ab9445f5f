// forkfeed-worker: a decode worker started by a forkfeed loader with the spawn start
// method. It finds the loader's arena at fd 3, its completion eventfd at fd 4, and the
// loader's stderr at fd 5 (its own fd 2 is a pipe the loader reads if it cannot start).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "loader/worker_launcher.h"

int main(int argc, char** argv) {
  CLI::App app{
      "forkfeed-worker: one decode worker of a forkfeed loader, started by the loader itself with "
      "start_method=spawn (and for every replacement of a dead worker). It is not meant to be run by hand: "
      "it expects the loader's shared memory arena at fd 3, its completion eventfd at fd 4 and its stderr at fd 5."};
  std::uint32_t id = 0;
  pid_t parent = 0;
  int log_level = 2;
  int die_with_parent = 1;
  app.add_option("--worker-id", id, "Which of the loader's workers this is")->required();
  app.add_option("--parent-pid", parent, "The loader's pid: the worker exits when it is gone")->required();
  app.add_option("--log-level", log_level, "spdlog level number (0 trace .. 6 off)");
  app.add_option("--die-with-parent", die_with_parent, "1: PR_SET_PDEATHSIG (spawned from the main thread)");
  CLI11_PARSE(app, argc, argv);

  if (die_with_parent != 0) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 1;
  ::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the whole group; the loader decides
  auto arena = forkfeed::Arena::attach(forkfeed::UniqueFd(forkfeed::kSpawnArenaFd));
  if (!arena.ok()) {
    std::fprintf(stderr, "forkfeed-worker: %s\n", arena.status().message().c_str());
    return 1;
  }
  if (id >= (*arena)->control().num_workers) {
    std::fprintf(stderr, "forkfeed-worker: worker id %u is out of range\n", id);
    return 1;
  }
  // Started: from here on it logs to the loader's stderr, not to the pipe that only
  // tells the loader why a worker could not start.
  ::dup2(forkfeed::kSpawnStderrFd, STDERR_FILENO);
  ::close(forkfeed::kSpawnStderrFd);
  return forkfeed::run_worker(**arena, forkfeed::WorkerIdentity{id, parent, log_level, forkfeed::kSpawnCompletionFd});
}
