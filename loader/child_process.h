// ChildProcess: the one owner of a child pid. The destructor kills and reaps a child
// that is still running, so no code path leaves a zombie or an orphan behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "forkfeed/status.h"

namespace forkfeed {

// How a child ended.
struct ExitInfo {
  int code = 0;    // exit code, when signal == 0
  int signal = 0;  // terminating signal, or 0
  // "exited with code 3", "killed by SIGKILL (the OOM killer is a likely cause)".
  std::string describe() const;
};

class ChildProcess {
 public:
  ChildProcess() = default;
  // Forks. The child closes every inherited fd above 2, resets signal handlers, ignores
  // SIGINT (the parent decides when workers stop), dies with this process where
  // PR_SET_PDEATHSIG can say so (forked from the main thread; `body` must also watch
  // getppid()), runs `body` and _exits with its result: it never returns here, and never
  // runs the parent's atexit handlers or static destructors.
  static Result<ChildProcess> fork(const std::function<int()>& body);

  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), exit_(std::move(other.exit_)) {}
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill_and_reap(); }

  pid_t pid() const { return pid_; }
  // Reaps the child if it has exited; never blocks.
  std::optional<ExitInfo> poll();
  // Waits up to `timeout` for the child to exit.
  std::optional<ExitInfo> wait_for(std::chrono::milliseconds timeout);
  // SIGKILL unless already reaped, then reap.
  void kill_and_reap();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<ExitInfo> exit_;
};

}  // namespace forkfeed
