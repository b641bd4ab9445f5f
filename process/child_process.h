// ChildProcess: the one owner of a child pid. The destructor kills and reaps a child
// that is still running, so no code path leaves a zombie or an orphan behind. Only in
// the process that started the child: a copy left in the child of a later fork() of
// that process does nothing to it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/owner_process.h"
#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

// How a child ended.
struct ExitInfo {
  int code = 0;    // exit code, when signal == 0
  int signal = 0;  // terminating signal, or 0
  // "exited with code 3", "killed by SIGKILL (the OOM killer is a likely cause)".
  std::string describe() const;
  // Ended by a fault of its own code: SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT.
  bool crashed() const;
};

class ChildProcess {
 public:
  ChildProcess() = default;
  // Forks. The child closes every inherited fd above 2 but `keep_fds`, resets signal handlers, ignores
  // SIGINT (the parent decides when workers stop), dies with this process where
  // PR_SET_PDEATHSIG can say so (forked from the main thread; `body` must also watch
  // getppid()), runs `body` and _exits with its result: it never returns here, and never
  // runs the parent's atexit handlers or static destructors.
  static Result<ChildProcess> fork(const std::function<int()>& body, std::span<const int> keep_fds = {});
  // posix_spawn of the executable `args[0]` with `args`, this process's environment, every
  // signal at its default and none blocked (nothing the parent ignores or blocks stays so);
  // each of `fds` (source, target) dup2'd, then every fd from `close_from` up closed.
  // `what` names it in errors ("the worker executable ...").
  static Result<ChildProcess> spawn(const std::vector<std::string>& args,
                                    std::span<const std::pair<int, int>> fds, int close_from,
                                    std::string_view what);
  // Takes ownership of |pid|, a child of this process (from posix_spawn, say).
  static Result<ChildProcess> adopt(pid_t pid);

  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        pidfd_(std::move(other.pidfd_)),
        exit_(std::move(other.exit_)),
        owner_(other.owner_) {}
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill_and_reap(); }

  pid_t pid() const { return pid_; }
  // Readable (POLLIN) once the child has exited: poll it with other fds.
  int pidfd() const { return pidfd_.get(); }
  // Reaps the child if it has exited; never blocks.
  std::optional<ExitInfo> poll();
  // True once poll(), wait_for() or kill_and_reap() has reaped it.
  bool reaped() const { return exit_.has_value(); }
  // Waits up to `timeout` for the child to exit.
  std::optional<ExitInfo> wait_for(std::chrono::milliseconds timeout);
  // SIGKILL unless already reaped, then reap; nothing in a process that did not start it.
  void kill_and_reap();

 private:
  ChildProcess(pid_t pid, UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<ExitInfo> exit_;
  OwnerProcess owner_;
};

}  // namespace forkfeed
