// Server: accept, reap, stats, shutdown.
#include "daemon/server.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>

namespace forkfeed {
namespace {

std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Connections accepted per poll round: past it the server expires handshakes and reaps
// ended sessions before accepting more, so a connect flood cannot outrun the cleanup.
constexpr int kAcceptsPerRound = 32;
// A connection is crowded out only once it has been silent this long (since accept or its
// last reply): a burst of ranks connecting together must not cut each other's hello
// before it is read. Past the budget with nobody that silent, the newcomer is refused.
constexpr auto kMinSilenceBeforeCrowdOut = std::chrono::seconds(1);

void refuse(Listener::Peer& peer, const std::string& why) {
  spdlog::warn("refused a connection from pid {} (uid {}): {}", peer.pid, peer.uid, why);
  const nlohmann::json notice = {{"error", why}};
  (void)send_frame(peer.socket.get(), MessageType::kNotice, notice.dump());
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(DaemonConfig config) {
  if (config.socket_path.empty()) config.socket_path = default_socket_path();
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  UniqueFd signals(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals.valid()) return Status::FromErrno("signalfd", errno);
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return Status::FromErrno("eventfd", errno);
  auto listener = Listener::bind(config.socket_path, !config.allow_uids.empty());
  if (!listener.ok()) return listener.status();
  // Before any session thread exists: the pool forks from a process that is safe to fork.
  auto pool =
      WorkerPool::open(PoolOptions{.workers = config.limits.max_workers, .log_level = config.log_level});
  if (!pool.ok()) return pool.status();
  config.limits.max_workers = (*pool)->workers();  // 0 was "the CPUs": now a number
  std::unique_ptr<Server> server(new Server(std::move(config), std::move(listener).value(),
                                            std::move(signals), std::move(stop), std::move(pool).value()));
  // Spawned, never forked, from this (the main) thread: UCX never enters forkfeedd.
  if (!server->config_.listen.empty()) {
    auto gateway = GatewaySupervisor::start(server->config_, server->listener_.path());
    if (!gateway.ok()) return gateway.status();
    server->gateway_ = std::move(gateway).value();
  }
  return server;
}

Server::Server(DaemonConfig config, Listener listener, UniqueFd signals, UniqueFd stop,
               std::shared_ptr<WorkerPool> pool)
    : config_(std::move(config)),
      pool_(std::move(pool)),
      admission_(config_.limits),
      listener_(std::move(listener)),
      signals_(std::move(signals)),
      stop_(std::move(stop)),
      started_(std::chrono::steady_clock::now()) {}

Server::~Server() { stop_serving(); }

void Server::stop_serving() {
  // Remote clients first: the gateway's streams close as its connections do.
  if (gateway_) gateway_->stop();
  // Stop accepting next, so nobody connects to a daemon that is going away.
  listener_.close();
  const std::uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  wake_sessions(true);
  reap(true);
}

Status Server::run() {
  const Limits& limits = admission_.limits();
  spdlog::info(
      "forkfeedd {} listening on {}: at most {} streams, {} workers, {} MiB of arenas ({} MiB per stream)",
      ::getpid(), listener_.path(), limits.max_streams, limits.max_workers, limits.max_arena_bytes >> 20,
      limits.max_stream_arena_bytes >> 20);
  if (gateway_) {
    for (const std::string& address : gateway_->listening()) {
      spdlog::info("remote clients: listening on {} (forkfeed-gateway)", address);
    }
  }
  while (true) {
    pollfd fds[2] = {{listener_.fd(), POLLIN, 0}, {signals_.get(), POLLIN, 0}};
    if (::poll(fds, 2, 100) < 0 && errno != EINTR) return Status::FromErrno("poll", errno);
    if (fds[1].revents != 0) {
      signalfd_siginfo info{};
      (void)!::read(signals_.get(), &info, sizeof info);
      spdlog::info("received {}; stopping",
                   sigabbrev_np(static_cast<int>(info.ssi_signo))
                       ? std::string("SIG") + sigabbrev_np(static_cast<int>(info.ssi_signo))
                       : "a signal");
      break;
    }
    if (fds[0].revents != 0) accept_some();
    expire_handshakes();
    wake_sessions(false);
    reap(false);
    if (gateway_) gateway_->tick(std::chrono::steady_clock::now());  // here: the main thread starts it
  }
  stop_serving();
  spdlog::info("stopped; every stream closed and every worker reaped");
  return Status::Ok();
}

std::size_t Server::max_sessions() const {
  // Streams, connections without one, and those that ended but are not reaped yet (at
  // most a round's accepts beyond the others): every one holds a thread until reaped.
  return admission_.limits().max_streams + config_.handshake.max_pending_connections + kAcceptsPerRound;
}

void Server::accept_some() {
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    auto peer = listener_.accept();
    if (!peer.ok()) {
      spdlog::warn("{}", peer.status().message());  // EMFILE, say: try again at the next poll
      return;
    }
    if (!peer->socket.valid()) return;  // none waiting
    const bool allowed = peer->uid == ::geteuid() ||
                         std::find(config_.allow_uids.begin(), config_.allow_uids.end(), peer->uid) !=
                             config_.allow_uids.end();
    if (!allowed) {
      refuse(*peer, "user " + std::to_string(peer->uid) + " may not use this forkfeedd (run by user " +
                        std::to_string(::geteuid()) + "); add the uid to allow_uids in its config");
      continue;
    }
    std::lock_guard lock(mu_);
    if (sessions_.size() >= max_sessions()) {
      refuse(*peer, "forkfeedd holds " + std::to_string(sessions_.size()) +
                        " connections, its most (max_streams + max_pending_connections + " +
                        std::to_string(kAcceptsPerRound) + "); try again in a moment");
      continue;
    }
    if (!make_room_for_handshake()) {
      refuse(*peer, "forkfeedd is answering the first requests of " +
                        std::to_string(config_.handshake.max_pending_connections) +
                        " connections (max_pending_connections), none silent for long; try again in a "
                        "moment or raise --max-pending-connections");
      continue;
    }
    const SessionContext context{&config_, &admission_, stop_.get(), pool_, [this] { return stats(); }};
    try {
      sessions_.emplace_back();  // the list's node first: once a session runs, nothing may throw
      sessions_.back() = std::make_unique<StreamSession>(next_id_++, std::move(peer).value(), context);
    } catch (const std::bad_alloc&) {
      if (!sessions_.empty() && sessions_.back() == nullptr) sessions_.pop_back();
      refuse(*peer, "forkfeedd is out of memory; try again in a moment");  // not moved: the socket is here
    }
  }
}

std::size_t Server::pending_connections() const {
  std::size_t pending = 0;
  for (const auto& session : sessions_) pending += session->handshake().pending() ? 1 : 0;
  return pending;
}

bool Server::make_room_for_handshake() {
  if (pending_connections() < config_.handshake.max_pending_connections) return true;
  // Full: the oldest connection silent for kMinSilenceBeforeCrowdOut goes, not the new
  // one. Refusing new connections would let anyone who keeps max_pending_connections
  // silent sockets open lock every client and forkfeed-ctl out; the minimum silence keeps
  // a burst of clients that connect together from cutting each other before their hello
  // is read. Connections answering a request are never crowded out.
  const auto now = Handshake::Clock::now();
  for (const auto& session : sessions_) {
    if (session->handshake().crowd_out(now, kMinSilenceBeforeCrowdOut)) return true;
  }
  return false;
}

void Server::expire_handshakes() {
  const auto now = Handshake::Clock::now();
  std::lock_guard lock(mu_);
  for (const auto& session : sessions_) (void)session->handshake().time_out(now, config_.handshake.timeout);
}

void Server::wake_sessions(bool stopping) {
  std::lock_guard lock(mu_);
  for (const auto& session : sessions_) session->wake(stopping);
}

void Server::reap(bool all) {
  std::list<std::unique_ptr<StreamSession>> done;
  {
    std::lock_guard lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (all || (*it)->finished()) {
        done.push_back(std::move(*it));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  done.clear();  // joins, outside the lock: a session may be asking for stats()
}

nlohmann::json Server::stats() const {
  const Admission::Totals used = admission_.totals();
  const Limits& limits = admission_.limits();
  nlohmann::json streams = nlohmann::json::array();
  std::size_t pending = 0;
  const auto now = std::chrono::steady_clock::now();
  nlohmann::json listening = gateway_ ? nlohmann::json(gateway_->listening()) : nlohmann::json::array();
  {
    std::lock_guard lock(mu_);
    for (const auto& session : sessions_) {
      nlohmann::json s = session->stats();
      if (!s.is_null()) streams.push_back(std::move(s));
    }
    pending = pending_connections();
  }
  // Each stream's share of the worker time the open streams got.
  double worker_ns = 0;
  for (const auto& s : streams) worker_ns += s.value("worker_ns", 0.0);
  for (auto& s : streams) s["worker_share"] = worker_ns > 0 ? s.value("worker_ns", 0.0) / worker_ns : 0.0;
  const double uptime = std::chrono::duration<double>(now - started_).count();
  nlohmann::json stats{{"daemon",
                        {{"pid", ::getpid()},
                         {"socket", listener_.path()},
                         {"uptime_s", uptime},
                         {"rss_bytes", resident_bytes()},
                         {"streams", used.streams},
                         {"workers", pool_->workers()},
                         {"start_method", std::string(to_string(pool_->start_method()))},
                         {"arena_bytes", used.arena_bytes},
                         {"listen", listening},
                         {"pending_connections", pending},
                         {"limits",
                          {{"max_streams", limits.max_streams},
                           {"max_workers", limits.max_workers},
                           {"max_stream_workers", limits.max_stream_workers},
                           {"max_arena_bytes", limits.max_arena_bytes},
                           {"max_stream_arena_bytes", limits.max_stream_arena_bytes},
                           {"max_pending_connections", config_.handshake.max_pending_connections},
                           {"handshake_timeout_ms", config_.handshake.timeout.count()}}}}},
                       {"streams", streams}};
  if (gateway_) stats["daemon"]["gateway"] = gateway_->stats(now);
  return stats;
}

}  // namespace forkfeed
