// WorkerPool: start, watch, replace, stop.
#include "process/worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/printable.h"
#include "transport/futex.h"

namespace forkfeed {
namespace {

// Reads what a spawned worker wrote to `fd` before it started, passes it on to this
// process's stderr (where it was meant to go), and returns its last line.
std::string forward_startup_stderr(int fd) {
  std::string text;
  char buffer[4096];
  while (true) {  // at most a pipe's capacity: a worker blocks when it is full
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF, or EAGAIN: the rest is still held by a child of the worker
    text.append(buffer, static_cast<std::size_t>(n));
    (void)!::write(STDERR_FILENO, buffer, static_cast<std::size_t>(n));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const std::size_t newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

}  // namespace

WorkerPool::WorkerPool(std::shared_ptr<Arena> arena, std::unique_ptr<WorkerLauncher> first,
                       std::unique_ptr<WorkerLauncher> replacement, int log_level)
    : arena_(std::move(arena)), first_(std::move(first)), replacement_(std::move(replacement)), log_level_(log_level) {}

Result<LaunchedWorker> WorkerPool::launch(WorkerLauncher& launcher, std::uint32_t id) {
  return launcher.launch(*arena_, WorkerIdentity{id, ::getpid(), log_level_, completions_.get()});
}

Status WorkerPool::start() {
  completions_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!completions_.valid()) return Status::FromErrno("eventfd for worker completions", errno);
  const std::uint32_t n = arena_->control().num_workers;
  workers_.reserve(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    auto child = launch(*first_, id);
    if (!child.ok()) {
      stop();
      return child.status();
    }
    workers_.push_back(std::move(child).value());
  }
  return Status::Ok();
}

WorkerPool::Events WorkerPool::wait(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  fds.reserve(workers_.size() + 1);
  fds.push_back({completions_.get(), POLLIN, 0});
  // The pidfd of a reaped worker stays readable: its death was reported by the wait()
  // that reaped it, and is not reported again (poll() skips a negative fd).
  for (const LaunchedWorker& w : workers_) fds.push_back({w.process.reaped() ? -1 : w.process.pidfd(), POLLIN, 0});
  Events events;
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return events;  // timeout or EINTR
  if (fds[0].revents & POLLIN) {
    std::uint64_t count;
    (void)!::read(completions_.get(), &count, sizeof count);  // resets the counter; the caller polls the rings
  }
  for (std::uint32_t id = 0; id < workers_.size(); ++id) {
    if ((fds[id + 1].revents & (POLLIN | POLLHUP)) && workers_[id].process.poll()) events.exited.push_back(id);
  }
  return events;
}

ExitInfo WorkerPool::exit_info(std::uint32_t id) { return workers_[id].process.poll().value_or(ExitInfo{-1, 0}); }

Status WorkerPool::start_failure(std::uint32_t id) {
  LaunchedWorker& w = workers_[id];
  if (!w.startup_stderr.valid()) return Status::Ok();  // forked, or asked already
  const std::string last_line = forward_startup_stderr(w.startup_stderr.get());
  w.startup_stderr.reset();
  const ExitInfo exit = exit_info(id);
  // Before its first heartbeat: 127 and 126, the exec or the dynamic loader failed; 2,
  // forkfeed-worker refused what it was given (another version's arena, a wrong fd). Each
  // would fail the same way again. (A 127 from a loader that could not map a library
  // under memory pressure is taken as permanent too: the message says what to check.)
  const bool could_not_run = exit.signal == 0 && (exit.code == 127 || exit.code == 126 || exit.code == 2);
  if (!could_not_run || arena_->channel(id).progress_ns.load() != 0) return Status::Ok();
  constexpr std::size_t kShown = 300;  // a line, not a log
  const std::string said = printable(last_line.substr(0, kShown)) + (last_line.size() > kShown ? "..." : "");
  return Status::WorkerDied("worker " + std::to_string(id) + " could not start: " + printable(w.executable) + " " +
                            exit.describe() + (said.empty() ? "" : " (\"" + said + "\")") +
                            "; not restarted, since it would fail the same way: check that it can run (its libraries "
                            "are found, it is executable), or set FORKFEED_WORKER to a forkfeed-worker that can");
}

Status WorkerPool::replace(std::uint32_t id) {
  auto child = launch(*replacement_, id);
  if (!child.ok()) return child.status();
  workers_[id] = std::move(child).value();
  return Status::Ok();
}

void WorkerPool::kill(std::uint32_t id) { ::kill(workers_[id].process.pid(), SIGKILL); }

void WorkerPool::stop(std::chrono::milliseconds grace) {
  if (workers_.empty()) return;
  if (!owner_.here()) {  // a fork's child: the workers, and the stop flag, are the parent's
    workers_.clear();    // the ChildProcess copies let go without a signal
    return;
  }
  ControlBlock& control = arena_->control();
  control.stop.store(1, std::memory_order_release);
  for (std::uint32_t id = 0; id < workers_.size(); ++id) futex_ring(&arena_->channel(id).task_bell);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (LaunchedWorker& w : workers_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    w.process.wait_for(std::max(left, std::chrono::milliseconds(0)));
    w.process.kill_and_reap();
  }
  workers_.clear();
}

}  // namespace forkfeed
