// Gateway: listeners, the event loop, and the sessions' lifecycle.
#include "gateway/gateway.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>

#include "protocol/frame.h"
#include "remote/net_address.h"
#include "remote/remote_wire.h"
#include "remote/tcp_socket.h"

namespace forkfeed {
namespace {

// Connections at once, greeted or not: past it a newcomer is told so and closed.
constexpr std::size_t kMaxSessions = 1024;
// Connections that have not greeted yet: past it the oldest of them makes room for the
// newcomer, so that strangers holding sockets open cannot lock out clients with the token
// (who greet within milliseconds of connecting).
constexpr std::size_t kMaxGreeting = 128;

}  // namespace

Gateway::~Gateway() {
  while (!sessions_.empty()) end_session(sessions_.begin());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!closing_.empty() && std::chrono::steady_clock::now() < deadline) {
    workers_->progress();
    reap_closes(false);
  }
  reap_closes(true);
}

std::list<std::unique_ptr<RemoteSession>>::iterator Gateway::end_session(
    std::list<std::unique_ptr<RemoteSession>>::iterator it) {
  if (ucs_status_ptr_t request = (*it)->release_endpoint(); request != nullptr) {
    closing_.push_back({request, std::chrono::steady_clock::now() + std::chrono::seconds(5)});
  }
  return sessions_.erase(it);
}

void Gateway::reap_closes(bool all) {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(closing_, [&](const Closing& c) {
    const bool done = workers_->api().ucp_request_check_status(c.request) != UCS_INPROGRESS;
    // An overdue one is let go: UCX releases it when (if ever) it completes.
    if (done || all || now > c.deadline) workers_->api().ucp_request_free(c.request);
    return done || all || now > c.deadline;
  });
}

Result<std::unique_ptr<Gateway>> Gateway::start(GatewaySettings settings,
                                                const std::vector<std::string>& addresses) {
  std::unique_ptr<Gateway> gateway(new Gateway(std::move(settings)));
  gateway->settings_.on_endpoint_error = on_endpoint_error;
  gateway->settings_.on_endpoint_error_arg = gateway.get();
  for (const std::string& text : addresses) {
    auto address = parse_net_address(text, "--listen");
    if (!address.ok()) return address.status();
    auto listener = listen_tcp(*address);
    if (!listener.ok()) return listener.status();
    gateway->listening_.push_back(describe(*address));
    gateway->listeners_.push_back(std::move(listener).value());
  }
  auto workers = SendWorkers::create();
  if (!workers.ok()) return workers.status();
  gateway->workers_.emplace(std::move(workers).value());
  return gateway;
}

void Gateway::on_endpoint_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* gateway = static_cast<Gateway*>(arg);
  for (const auto& session : gateway->sessions_) {
    if (session->endpoint() == ep) session->endpoint_failed(gateway->workers_->api().error(status));
  }
}

void Gateway::accept(int listener) {
  for (int i = 0; i < 32; ++i) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    UniqueFd fd(::accept4(listener, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        spdlog::warn("accepting a remote client: {}", std::strerror(errno));
      }
      return;
    }
    tighten_tcp(fd.get());
    const std::string peer = describe(from);
    std::size_t greeting = 0;
    RemoteSession* oldest = nullptr;
    for (const auto& session : sessions_) {
      if (session->greeted() || session->finished()) continue;
      greeting += 1;
      if (oldest == nullptr) oldest = session.get();
    }
    if (greeting >= kMaxGreeting) oldest->crowd_out();
    if (sessions_.size() >= kMaxSessions) {
      (void)send_frame(fd.get(), MessageType::kNotice,
                       R"({"error":"forkfeed-gateway serves its most connections; try again in a moment"})");
      spdlog::warn("remote client {}: refused, {} connections already", peer, sessions_.size());
      continue;
    }
    sessions_.push_back(std::make_unique<RemoteSession>(peer, TokenThrottle::address_of(from), std::move(fd),
                                                        *workers_, settings_, throttle_));
    spdlog::debug("remote client {}: connected", peer);
  }
}

Status Gateway::run(int stop_fd) {
  std::vector<pollfd> fds;
  std::vector<RemoteSession*> polled;
  while (true) {
    workers_->progress();  // sends complete; endpoints fail
    const auto now = RemoteSession::Clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      (*it)->tick(now);
      it = (*it)->finished() ? end_session(it) : std::next(it);
    }
    reap_closes(false);
    if (!workers_->arm()) continue;
    fds.assign({{stop_fd, POLLIN, 0}});
    for (const UniqueFd& listener : listeners_) fds.push_back({listener.get(), POLLIN, 0});
    for (const int fd : workers_->event_fds()) fds.push_back({fd, POLLIN, 0});
    const std::size_t first_session = fds.size();
    polled.clear();
    // A hello waiting for its turn is checked within 50 ms of it, not at the next beat.
    bool waiting_turn = false;
    for (const auto& session : sessions_) {
      waiting_turn = waiting_turn || session->waiting_turn();
      fds.push_back({session->control_fd(), POLLIN, 0});
      fds.push_back({session->daemon_fd(), POLLIN, 0});
      fds.push_back({session->delivered_fd(), POLLIN, 0});
      polled.push_back(session.get());
    }
    const int timeout_ms = waiting_turn ? 50 : static_cast<int>(kHeartbeatInterval.count() / 2);
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      return Status::FromErrno("poll in forkfeed-gateway", errno);
    }
    if (fds[0].revents != 0) return Status::Ok();
    for (std::size_t i = 0; i < listeners_.size(); ++i) {
      if (fds[1 + i].revents != 0) accept(listeners_[i].get());
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      const pollfd* p = &fds[first_session + 3 * i];
      if (p[0].revents != 0) polled[i]->on_control();
      if (p[1].revents != 0) polled[i]->on_daemon();
      if (p[2].revents != 0) polled[i]->pump();
    }
  }
}

}  // namespace forkfeed
