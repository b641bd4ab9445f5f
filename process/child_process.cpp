// ChildProcess: fork with parent-death signal, reaping, and exit descriptions.
#include "process/child_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/fork_copy.h"

extern char** environ;

namespace forkfeed {

std::string ExitInfo::describe() const {
  if (signal == 0) return "exited with code " + std::to_string(code);
  std::string s = std::string("killed by SIG") + (sigabbrev_np(signal) ? sigabbrev_np(signal) : "?");
  if (signal == SIGKILL) s += " (the OOM killer is a likely cause)";
  if (signal == SIGBUS) s += " (a fault on shared memory: is the memfd arena's file system full?)";
  if (signal == SIGSEGV) s += " (a crash, possibly in an image codec)";
  return s;
}

namespace {

// Closes every fd from 3 up but those in `keep`.
void close_fds_except(std::span<const int> keep) {
  std::vector<int> sorted(keep.begin(), keep.end());
  std::sort(sorted.begin(), sorted.end());
  unsigned first = 3;
  for (int fd : sorted) {
    if (fd < 3) continue;
    if (static_cast<unsigned>(fd) > first) ::close_range(first, static_cast<unsigned>(fd) - 1, 0);
    first = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(first, ~0U, 0);
}

}  // namespace

bool ExitInfo::crashed() const {
  return signal == SIGSEGV || signal == SIGBUS || signal == SIGFPE || signal == SIGILL || signal == SIGABRT;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& args,
                                         std::span<const std::pair<int, int>> fds, int close_from,
                                         std::string_view what) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const auto& [source, target] : fds) posix_spawn_file_actions_adddup2(&actions, source, target);
  posix_spawn_file_actions_addclosefrom_np(&actions, close_from);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) return Status::FromErrno("posix_spawn of " + std::string(what) + " " + args[0], err);
  return adopt(pid);
}

Result<ChildProcess> ChildProcess::adopt(pid_t pid) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) {
    const int err = errno;
    ChildProcess doomed(pid, UniqueFd());  // kills and reaps it
    // ENOSYS is the only failure that says anything about the kernel; EMFILE and the
    // like are this process's fds, which the message must name as they are.
    return Status::FromErrno("pidfd_open for worker pid " + std::to_string(pid) +
                                 (err == ENOSYS ? " (Linux 5.3 or later is needed)" : ""),
                             err);
  }
  return ChildProcess(pid, std::move(pidfd));
}

Result<ChildProcess> ChildProcess::fork(const std::function<int()>& body, std::span<const int> keep_fds) {
  const pid_t parent = ::getpid();
  const bool forked_from_main_thread = ::gettid() == parent;
  // Every signal is blocked across fork(), so none reaches the child while it still has
  // the parent's handlers (a Ctrl-C then would kill a worker before it ignores SIGINT);
  // the child unblocks them once its own dispositions are set.
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  const pid_t pid = [] {
    const ForkCopy::SharedScope shared;  // a worker writes into the very slots the parent reads
    return ::fork();
  }();
  if (pid != 0) {
    const int err = errno;
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (pid < 0) return Status::FromErrno("fork of a worker process", err);
    return adopt(pid);
  }
  // In the child. PR_SET_PDEATHSIG fires when the forking *thread* exits, so it is only
  // right when that thread is the main one; otherwise the body's own parent check
  // (getppid) is what ends an orphan.
  if (forked_from_main_thread) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  // Nothing of the parent's but the mappings: no fds (a trainer's sockets and pipes
  // must see EOF when it closes them), no signal handlers, no blocked signals.
  close_fds_except(keep_fds);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  ::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the whole group; the parent decides
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int code = 1;
  try {
    code = body();
  } catch (...) {
    code = 2;  // nothing may unwind out of a forked child into the parent's frames
  }
  ::_exit(code);
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    exit_ = std::move(other.exit_);
    owner_ = other.owner_;
  }
  return *this;
}

std::optional<ExitInfo> ChildProcess::poll() {
  if (exit_ || pid_ < 0) return exit_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) {  // ECHILD: reaped elsewhere (someone set SIGCHLD to SIG_IGN)
    exit_ = ExitInfo{-1, 0};
  } else if (WIFSIGNALED(status)) {
    exit_ = ExitInfo{0, WTERMSIG(status)};
  } else {
    exit_ = ExitInfo{WEXITSTATUS(status), 0};
  }
  return exit_;
}

std::optional<ExitInfo> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto step = std::chrono::microseconds(100);;
       step = std::min(step * 2, std::chrono::microseconds(10'000))) {
    if (auto e = poll()) return e;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(step);
  }
}

void ChildProcess::kill_and_reap() {
  if (pid_ < 0 || exit_) return;
  // A copy in the child of a fork(): the process is a sibling's now, not ours to kill,
  // and waitpid() could not reap it anyway.
  if (!owner_.here()) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_ = ExitInfo{0, SIGKILL};
}

}  // namespace forkfeed
