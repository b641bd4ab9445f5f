// WorkerPool: start, attach and detach loaders, watch, replace, stop.
#include "process/worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>

#include "base/logging.h"
#include "base/printable.h"
#include "forkfeed/fork_safety.h"
#include "process/start_method.h"
#include "transport/futex.h"
#include "transport/pool_message.h"

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

std::uint32_t cpu_count() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<std::uint32_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

WorkerPool::Impl::Impl(PoolMemory memory, std::unique_ptr<WorkerLauncher> first,
                       std::unique_ptr<WorkerLauncher> replacement, int log_level)
    : memory_(std::move(memory)),
      first_(std::move(first)),
      replacement_(std::move(replacement)),
      log_level_(log_level),
      places_(memory_.workers()) {}

Result<std::unique_ptr<WorkerPool::Impl>> WorkerPool::Impl::start(std::uint32_t workers,
                                                                  std::unique_ptr<WorkerLauncher> first,
                                                                  std::unique_ptr<WorkerLauncher> replacement,
                                                                  int log_level) {
  auto memory = PoolMemory::create(workers);
  if (!memory.ok()) return memory.status();
  std::unique_ptr<Impl> pool(
      new Impl(std::move(memory).value(), std::move(first), std::move(replacement), log_level));
  for (std::uint32_t w = 0; w < workers; ++w) {
    if (Status s = pool->launch(w, *pool->first_); !s.ok())
      return s;  // the pool's destructor stops the others
  }
  return pool;
}

WorkerPool::Impl::~Impl() { stop(); }

Status WorkerPool::Impl::launch(std::uint32_t w, WorkerLauncher& launcher) {
  Place& place = places_[w];
  auto ends = pool_socket_pair();
  if (!ends.ok()) return ends.status();
  // The pool never waits for a worker to read (it holds the lock that every loader needs).
  if (::fcntl(ends->first.get(), F_SETFL, O_NONBLOCK) != 0)
    return Status::FromErrno("fcntl of a pool socket", errno);
  const std::uint64_t incarnation = place.incarnation + 1;
  auto child =
      launcher.launch(memory_, WorkerIdentity{w, incarnation, ::getpid(), log_level_, ends->second.get()});
  if (!child.ok()) return child.status();
  if (place.running) retired_.push_back(std::move(place.worker));
  place.worker = std::move(child).value();
  place.socket = std::move(ends->first);
  place.backlog.clear();  // meant for the life that ended: this one is sent every loader
  place.incarnation = incarnation;
  place.running = true;
  place.timed_out = false;
  for (const Attached& a : attached_) send(w, PoolMessage{PoolMessage::Kind::kAttach, a.id});
  return Status::Ok();
}

void WorkerPool::Impl::send(std::uint32_t w, const PoolMessage& message) {
  std::deque<PoolMessage>& backlog = places_[w].backlog;
  if (message.kind == PoolMessage::Kind::kDetach) {
    // A loader that leaves before the worker heard of it: neither message is needed.
    const auto before = backlog.size();
    std::erase_if(backlog, [&](const PoolMessage& m) { return m.loader == message.loader; });
    if (backlog.size() != before) return;
  }
  backlog.push_back(message);
  flush(w);
}

void WorkerPool::Impl::flush(std::uint32_t w) {
  Place& place = places_[w];
  bool sent_any = false;
  while (!place.backlog.empty()) {
    const PoolMessage& m = place.backlog.front();
    // An attach still queued is of a loader still attached: its detach would have
    // cancelled it.
    const auto a =
        std::find_if(attached_.begin(), attached_.end(), [&](const Attached& x) { return x.id == m.loader; });
    const bool attach = m.kind == PoolMessage::Kind::kAttach && a != attached_.end();
    const Status sent = send_pool_message(place.socket.get(), m, attach ? a->arena.get() : -1,
                                          attach ? a->completions.get() : -1);
    // A full socket: the worker is busy in a sample, or stopped; the rest waits for the
    // next send() or wait(). Any other failure: the worker is gone, and its replacement
    // is sent every loader afresh.
    if (sent.code() == Status::Code::kResourceExhausted) break;
    place.backlog.pop_front();
    sent_any = true;
  }
  if (!sent_any) return;
  WorkerState& state = memory_.worker(w);
  state.messages.fetch_add(1, std::memory_order_release);
  futex_ring(&state.bell);
}

std::uint32_t WorkerPool::Impl::loaders() const {
  std::lock_guard lock(mu_);
  return static_cast<std::uint32_t>(attached_.size());
}

Result<WorkerPool::Impl::Membership> WorkerPool::Impl::attach(const Arena& arena, int completions) {
  if (Status s =
          owner_.check("WorkerPool", "open a new WorkerPool (or a Loader without one) in this process");
      !s.ok()) {
    return s;
  }
  if (arena.control().num_workers != size()) {
    return Status::Internal("a loader's arena has " + std::to_string(arena.control().num_workers) +
                            " channels for a pool of " + std::to_string(size()) + " workers");
  }
  // The pool's own copies: a worker started later (a replacement), or one that reads its
  // socket late, is sent them while the loader is attached.
  UniqueFd arena_fd(::fcntl(arena.fd(), F_DUPFD_CLOEXEC, 0));
  UniqueFd completions_fd(::fcntl(completions, F_DUPFD_CLOEXEC, 0));
  if (!arena_fd.valid() || !completions_fd.valid()) {
    return Status::FromErrno("duplicating a loader's arena and eventfd for its worker pool", errno);
  }
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_loader_++;
  attached_.push_back(Attached{id, std::move(arena_fd), std::move(completions_fd), {}});
  for (std::uint32_t w = 0; w < size(); ++w) {
    arena.channel(w).incarnation.store(places_[w].incarnation, std::memory_order_release);
    if (places_[w].running) send(w, PoolMessage{PoolMessage::Kind::kAttach, id});
  }
  return Membership(this, id);
}

void WorkerPool::Impl::detach(std::uint64_t id) {
  std::lock_guard lock(mu_);
  std::erase_if(attached_, [id](const Attached& a) { return a.id == id; });
  if (!owner_.here()) return;  // a fork's child: the workers are the parent's
  for (std::uint32_t w = 0; w < size(); ++w) {
    if (places_[w].running) send(w, PoolMessage{PoolMessage::Kind::kDetach, id});
  }
}

WorkerPool::Impl::Membership& WorkerPool::Impl::Membership::operator=(Membership&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr) pool_->detach(id_);
    pool_ = std::exchange(other.pool_, nullptr);
    id_ = std::exchange(other.id_, kNoLoader);
  }
  return *this;
}

WorkerPool::Impl::Membership::~Membership() {
  if (pool_ != nullptr) pool_->detach(id_);
}

void WorkerPool::Impl::wait(int completions, std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  {
    std::lock_guard lock(mu_);
    ++waiting_;
    fds.reserve(places_.size() + 1);
    fds.push_back({completions, POLLIN, 0});
    // A reaped worker's pidfd stays readable: its death was reported by the wait() that
    // reaped it (poll() skips a negative fd).
    for (const Place& s : places_) fds.push_back({s.running ? s.worker.process.pidfd() : -1, POLLIN, 0});
  }
  const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready > 0 && (fds[0].revents & POLLIN)) {
    std::uint64_t count;
    (void)!::read(completions, &count, sizeof count);  // resets the counter; the caller polls the rings
  }
  std::lock_guard lock(mu_);
  for (std::uint32_t w = 0; w < places_.size(); ++w) {
    if (ready > 0 && (fds[w + 1].revents & (POLLIN | POLLHUP))) reap(w);
    if (places_[w].running && !places_[w].backlog.empty()) flush(w);
  }
  if (--waiting_ == 0) retired_.clear();
}

void WorkerPool::Impl::reap(std::uint32_t w) {
  Place& place = places_[w];
  if (!place.running) return;
  const std::optional<ExitInfo> exit = place.worker.process.poll();
  if (!exit) return;  // another life of it by now, or not dead after all
  WorkerState& state = memory_.worker(w);
  WorkerDeath death{w,
                    place.incarnation,
                    place.worker.process.pid(),
                    *exit,
                    state.current_loader.load(),
                    state.current_sample.load(),
                    start_failure(w, *exit),
                    place.timed_out};
  memory_.reset_worker(w);  // no process touches it now
  place.running = false;
  retired_.push_back(std::move(place.worker));
  if (death.failure.ok()) {
    if (Status s = launch(w, *replacement_); !s.ok()) {
      death.failure =
          Status::WorkerDied("worker " + std::to_string(w) + " could not be replaced: " + s.message());
    }
  }
  if (!death.failure.ok()) loader_logger()->error("{}", death.failure.message());
  const std::uint64_t one = 1;
  for (Attached& a : attached_) {
    a.deaths.push_back(death);
    (void)!::write(a.completions.get(), &one, sizeof one);  // wakes the loader's wait()
  }
}

Status WorkerPool::Impl::start_failure(std::uint32_t w, const ExitInfo& exit) {
  LaunchedWorker& worker = places_[w].worker;
  if (!worker.startup_stderr.valid()) return Status::Ok();  // forked
  const std::string last_line = forward_startup_stderr(worker.startup_stderr.get());
  worker.startup_stderr.reset();
  // Before its first heartbeat: 127 and 126, the exec or the dynamic loader failed; 2,
  // forkfeed-worker refused what it was given (another version's pool, a wrong fd). Each
  // would fail the same way again. (A 127 from a loader that could not map a library
  // under memory pressure is taken as permanent too: the message says what to check.)
  const bool could_not_run = exit.signal == 0 && (exit.code == 127 || exit.code == 126 || exit.code == 2);
  if (!could_not_run || memory_.worker(w).progress_ns.load() != 0) return Status::Ok();
  constexpr std::size_t kShown = 300;  // a line, not a log
  const std::string said = printable(last_line.substr(0, kShown)) + (last_line.size() > kShown ? "..." : "");
  return Status::WorkerDied(
      "worker " + std::to_string(w) + " could not start: " + printable(worker.executable) + " " +
      exit.describe() + (said.empty() ? "" : " (\"" + said + "\")") +
      "; not restarted, since it would fail the same way: check that it can run (its libraries "
      "are found, it is executable), or set FORKFEED_WORKER to a forkfeed-worker that can");
}

std::vector<WorkerDeath> WorkerPool::Impl::take_deaths(std::uint64_t loader) {
  std::lock_guard lock(mu_);
  for (Attached& a : attached_) {
    if (a.id == loader) return std::exchange(a.deaths, {});
  }
  return {};
}

std::uint64_t WorkerPool::Impl::incarnation(std::uint32_t w) const {
  std::lock_guard lock(mu_);
  return places_[w].running ? places_[w].incarnation : 0;
}

pid_t WorkerPool::Impl::pid(std::uint32_t w) const {
  std::lock_guard lock(mu_);
  return places_[w].worker.process.pid();
}

void WorkerPool::Impl::kill(std::uint32_t w, std::uint64_t incarnation) {
  std::lock_guard lock(mu_);
  if (places_[w].running && places_[w].incarnation == incarnation) {
    places_[w].timed_out = true;
    ::kill(places_[w].worker.process.pid(), SIGKILL);
  }
}

void WorkerPool::Impl::stop() {
  std::lock_guard lock(mu_);
  if (!owner_.here()) {  // a fork's child: the workers, and the stop flag, are the parent's
    places_.clear();     // the ChildProcess copies let go without a signal
    retired_.clear();
    return;
  }
  memory_.block().stop.store(1, std::memory_order_release);
  for (std::uint32_t w = 0; w < places_.size(); ++w) futex_ring(&memory_.worker(w).bell);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
  for (Place& s : places_) {
    if (!s.running) continue;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    s.worker.process.wait_for(std::max(left, std::chrono::milliseconds(0)));
    s.worker.process.kill_and_reap();
  }
  places_.clear();
  retired_.clear();
}

// The public face.

WorkerPool::WorkerPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkerPool::~WorkerPool() = default;
std::uint32_t WorkerPool::workers() const { return impl_->size(); }
StartMethod WorkerPool::start_method() const { return impl_->start_method(); }
std::uint32_t WorkerPool::loaders() const { return impl_->loaders(); }

Result<std::shared_ptr<WorkerPool>> WorkerPool::open(const PoolOptions& options) {
  if (Status s = set_log_level(options.log_level); !s.ok()) return s;
  const std::uint32_t workers = options.workers == 0 ? cpu_count() : options.workers;
  if (workers > kMaxPoolWorkers) {
    return Status::InvalidArgument("workers=" + std::to_string(workers) + " is over the limit of " +
                                   std::to_string(kMaxPoolWorkers) + " workers per pool");
  }
  auto start = choose_start_method(options.start_method, options.fork_hazard, ForkSafety::assess());
  if (!start.ok()) return start.status();
  const auto log = loader_logger();
  if (!start->warning.empty()) log->warn("{}", start->warning);
  auto impl = Impl::start(workers, std::move(start->launcher), make_spawn_launcher(), log->level());
  if (!impl.ok()) return impl.status();
  log->debug("started a pool of {} workers by {} ({})", workers, to_string((*impl)->start_method()),
             start->why);
  return std::shared_ptr<WorkerPool>(new WorkerPool(std::move(impl).value()));
}

}  // namespace forkfeed
