// forkfeed-worker: a decode worker started by a forkfeed loader with the spawn start
// method. It finds its pool's shared memory at fd 3, its pool socket (which brings the
// arenas of the loaders it serves) at fd 4, and the loader's stderr at fd 5 (its own fd 2
// is a pipe the pool reads if it cannot start).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <string>

#include "base/printable.h"
#include "process/worker_launcher.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"

namespace {

constexpr const char* kStartedByLoader =
    "forkfeed-worker is started by a forkfeed loader (start_method=spawn), not by hand; if a loader did "
    "start it, the two come from different forkfeed builds (check FORKFEED_WORKER)";

int refuse(const std::string& why) {
  std::fprintf(stderr, "forkfeed-worker: %s; %s\n", forkfeed::printable(why).c_str(), kStartedByLoader);
  return forkfeed::cli::kExitBadArguments;
}

// What `fd` refers to, as /proc shows it ("anon_inode:[eventfd]", "/memfd:... (deleted)");
// empty when it is not open.
std::string fd_target(int fd) {
  std::array<char, 256> target{};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size() - 1);
  return n > 0 ? std::string(target.data(), static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "forkfeed-worker: one decode worker of a forkfeed loader, started by the loader itself with "
      "start_method=spawn (and for every replacement of a dead worker). It is not meant to be run by hand: "
      "it expects its pool's shared memory at fd 3, its pool socket at fd 4 and its stderr at fd 5."};
  app.footer("Exit status: 0 stopped by the loader, 1 the loader is gone or failed, 2 bad arguments or fds.");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeed-worker: " + std::string(e.what()) + " (see --help)\n";
  });
  std::uint32_t id = 0;
  std::uint64_t incarnation = 0;
  pid_t parent = 0;
  int log_level = 2;
  int die_with_parent = 1;
  app.add_option("--worker-id", id, "Which of the loader's workers this is")
      ->required()
      ->check(forkfeed::cli::integer_of(id));
  app.add_option("--incarnation", incarnation, "Which life of that worker this is (the pool counts from 1)")
      ->required()
      ->check(forkfeed::cli::integer_of(incarnation));
  app.add_option("--parent-pid", parent, "The loader's pid: the worker exits when it is gone")
      ->required()
      ->check(forkfeed::cli::integer_of(parent));
  app.add_option("--log-level", log_level, "spdlog level number (0 trace .. 6 off)")
      ->check(forkfeed::cli::integer_of(log_level))
      ->check(CLI::Range(0, 6));
  app.add_option("--die-with-parent", die_with_parent, "1: PR_SET_PDEATHSIG (spawned from the main thread)")
      ->check(forkfeed::cli::integer_of(die_with_parent));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }

  if (die_with_parent != 0) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    std::fprintf(stderr, "forkfeed-worker: the loader, pid %d, is not this process's parent (pid %d); %s\n",
                 static_cast<int>(parent), static_cast<int>(::getppid()), kStartedByLoader);
    return forkfeed::cli::kExitFailed;
  }
  ::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the whole group; the loader decides
  if (::fcntl(forkfeed::kSpawnPoolFd, F_GETFD) == -1) {
    return refuse("fd " + std::to_string(forkfeed::kSpawnPoolFd) +
                  " is not open; it must be the pool's shared memory");
  }
  if (const std::string target = fd_target(forkfeed::kSpawnSocketFd); !target.starts_with("socket:")) {
    return refuse("fd " + std::to_string(forkfeed::kSpawnSocketFd) + " is " +
                  (target.empty() ? "not open" : "not a socket but " + target) +
                  "; it must be the pool socket");
  }
  auto pool = forkfeed::PoolMemory::attach(forkfeed::UniqueFd(forkfeed::kSpawnPoolFd));
  if (!pool.ok()) {
    return refuse("fd " + std::to_string(forkfeed::kSpawnPoolFd) + " is not the pool's shared memory (" +
                  pool.status().message() + ")");
  }
  if (id >= pool->workers()) {
    return refuse("--worker-id " + std::to_string(id) + " is out of range: the pool has " +
                  std::to_string(pool->workers()) + " workers");
  }
  // Started: from here on it logs to the loader's stderr, not to the pipe that only
  // tells the loader why a worker could not start.
  ::dup2(forkfeed::kSpawnStderrFd, STDERR_FILENO);
  ::close(forkfeed::kSpawnStderrFd);
  return forkfeed::run_worker(
      *pool, forkfeed::WorkerIdentity{id, incarnation, parent, log_level, forkfeed::kSpawnSocketFd});
}
