// RemoteLink: the client's end of a stream over UCX — its control channel, its UCX
// receiver and its thread, opened in turn and waited on together.
#include "client/remote/remote_link.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "client/remote/waiting_clock.h"
#include "protocol/stream_request.h"
#include "remote/net_address.h"
#include "remote/tcp_socket.h"

namespace forkfeed {

using json = nlohmann::json;

namespace {

class RemoteLease final : public detail::SlotLease {
 public:
  RemoteLease(std::shared_ptr<ReceiveArena> arena, std::uint32_t slot)
      : arena_(std::move(arena)), slot_(slot) {}
  ~RemoteLease() override { arena_->give_back(slot_, true); }

 private:
  std::shared_ptr<ReceiveArena> arena_;
  std::uint32_t slot_;
};

}  // namespace

RemoteLink::RemoteLink(std::string address, UniqueFd control, std::shared_ptr<UcxContext> context,
                       std::unique_ptr<UcxWorker> worker)
    : state_(std::move(address)),
      control_(state_, std::move(control)),
      receiver_(state_, std::move(context), std::move(worker)),
      thread_(state_, receiver_, control_) {}

RemoteLink::~RemoteLink() {
  if (!owner_.here()) {  // a fork's child: UCX, the stream and the link's thread are the parent's
    thread_.abandon();
    return;
  }
  thread_.stop();  // from here on, this thread alone calls the worker
  // Closing the control connection ends the gateway's session and its endpoint to this
  // worker, which ends the receives in flight. UCX must not destroy a worker with one
  // still pending (it asserts): finish() waits for them a while.
  control_.close();
  receiver_.finish();
}

Result<std::unique_ptr<RemoteLink>> RemoteLink::open(const RemoteDaemon& daemon,
                                                     std::chrono::milliseconds timeout, int pin_device,
                                                     const json& request, json& opened) {
  auto started = start(daemon, timeout);
  if (!started.ok()) return started.status();
  std::unique_ptr<RemoteLink> link = std::move(started).value();
  // From the connect on: the hello, the welcome and the opening.
  const Clock::time_point deadline = Clock::now() + timeout;
  Status refused;
  auto open = link->progress_until(
      [&] {
        auto done = link->opening(request, pin_device, opened);
        if (!done.ok()) refused = done.status();
        return !done.ok() || *done;
      },
      -1, deadline);
  if (!refused.ok()) return refused;
  if (!open.ok()) return open.status();
  if (!*open) return link->late(timeout);
  return link;
}

Result<std::unique_ptr<RemoteLink>> RemoteLink::start(const RemoteDaemon& daemon,
                                                      std::chrono::milliseconds timeout) {
  auto token = ControlChannel::token(daemon);
  if (!token.ok()) return token.status();
  const std::string& address = daemon.address;
  auto where = parse_net_address(address, "the remote forkfeedd's address");
  if (!where.ok()) return where.status();
  // UCX first, its worker too: in a process that cannot use it (a fork's child) nothing is
  // connected, and a worker UCX will not make (this process's UCX_ settings) is this
  // trainer's error, not one of the daemon's that a fan-in would take for a lost daemon.
  // Large tcp segments: the hello says so, and the gateway sends in segments as large.
  auto context = UcxContext::create(kLargeTcpSegment);
  if (!context.ok()) return context.status();
  auto worker = UcxWorker::create(*context, UCS_THREAD_MODE_SERIALIZED);  // the link's thread, and its end
  if (!worker.ok()) return Status::FailedPrecondition(worker.status().message());
  auto worker_address = (*worker)->address();
  if (!worker_address.ok()) return worker_address.status();
  auto control = connect_tcp(*where, timeout, "the remote forkfeedd");
  if (!control.ok()) return control.status();
  std::unique_ptr<RemoteLink> link(new RemoteLink(address, std::move(control).value(),
                                                  std::move(context).value(), std::move(worker).value()));
  if (Status s = link->receiver_.listen(); !s.ok()) return s;
  if (Status s = link->thread_.start(); !s.ok()) return s;
  if (Status s = link->control_.hello(*token, *worker_address, link->receiver_.tcp_segment()); !s.ok()) {
    return s;
  }
  return link;
}

Result<bool> RemoteLink::opening(const json& request, int pin_device, json& opened) {
  std::lock_guard lock(state_.mu);
  if (phase_ == Phase::kOpen) return true;
  // A refusal's reply comes with its notice: it first.
  if (!state_.lost.ok() && !control_.has_reply()) return state_.lost;
  if (phase_ == Phase::kHello) {
    auto reply = take_reply();
    if (!reply) return false;
    if (!reply->ok()) return reply->status();
    phase_ = Phase::kWelcome;
  }
  if (phase_ == Phase::kWelcome) {
    // Its welcome over UCX: the two workers' handshake is over, and batches can come.
    if (!receiver_.welcomed()) return false;
    if (Status s = send_request(MessageType::kOpenStream, request); !s.ok()) return s;
    phase_ = Phase::kOpening;
    return false;
  }
  auto reply = take_reply();
  if (!reply) return false;
  if (!reply->ok()) return reply->status();
  if (Status s = make_arena(**reply, pin_device); !s.ok()) return s;
  opened = std::move(**reply);
  phase_ = Phase::kOpen;
  return true;
}

Status RemoteLink::late(std::chrono::milliseconds timeout) {
  const std::string within = " within " + std::to_string(timeout.count()) + " ms";
  const std::string& address = state_.address;
  switch (phase_) {
    case Phase::kHello:
      return state_.fail("the remote forkfeedd at " + address +
                         " took the connection but did not answer its hello" + within +
                         ": is its forkfeed-gateway (or its host) stopped or hung? (A gateway that was sent "
                         "wrong tokens from this address answers its next hellos up to " +
                         std::to_string(kWrongTokenMostWait.count()) +
                         " s late: raise connect_timeout, or wait.)");
    case Phase::kWelcome:
      return state_.fail("the remote forkfeedd at " + address +
                         " took the token, but nothing it sent over UCX reached "
                         "this process" +
                         within +
                         ": do UCX_TLS and UCX_NET_DEVICES allow a common transport on both "
                         "machines, and does a firewall let UCX's connections through?");
    case Phase::kOpening:
      return state_.fail(
          "the remote forkfeedd at " + address + " took the token but did not open the stream" + within +
          " (connect_timeout): is its forkfeedd stopped or hung? (A dataset that takes longer to index "
          "needs a larger connect_timeout.)");
    case Phase::kOpen: break;
  }
  return Status::Ok();
}

Status RemoteLink::make_arena(const json& opened, int pin_device) {
  auto slots = get_uint(opened, "slots", kChannelCapacity);
  auto slot_bytes = get_uint(opened, "slot_bytes", std::uint64_t{1} << 36);
  if (!slots.ok() || !slot_bytes.ok() || *slots == 0 || *slot_bytes == 0) {
    return Status::Internal(
        "the remote forkfeedd at " + state_.address +
        " sent no receive slot sizes (slots, slot_bytes); is it another forkfeed version?");
  }
  if (Status s = receiver_.make_arena(static_cast<std::uint32_t>(*slots), *slot_bytes, pin_device); !s.ok()) {
    return s;
  }
  receiver_.give_credits(control_);
  thread_.wake();  // to watch the slots given back
  return Status::Ok();
}

Status RemoteLink::check() {
  std::lock_guard lock(state_.mu);
  if (state_.lost.ok()) service();
  return state_.lost;
}

void RemoteLink::service() {
  std::lock_guard lock(state_.mu);
  control_.read();
  receiver_.give_credits(control_);
}

void RemoteLink::add_poll_fds(std::vector<pollfd>& fds) const {
  fds.push_back({thread_.news_fd(), POLLIN, 0});
  fds.push_back({control_.fd(), POLLIN, 0});
  fds.push_back({receiver_.returned_fd(), POLLIN, 0});
}

void RemoteLink::after_poll(const pollfd* mine) {
  for (std::size_t i : {0, 2}) {  // news, which service() and the waits read; credits, which it gives
    if (mine[i].revents != 0) ProgressThread::drain(mine[i].fd);
  }
}

Status RemoteLink::lose_silent() {
  return state_.lose("no word from it for " + std::to_string(kRemoteSilence.count()) +
                     " ms (its host, its forkfeedd or the network is down)");
}

Result<bool> RemoteLink::progress_until(const std::function<bool()>& until, int interrupt_fd,
                                        Clock::time_point deadline) {
  // Silence counts only while this call waits: a trainer that computed for a minute
  // between two calls, or was stopped in one, did not hear the beats of that time yet.
  WaitingClock waiting;
  std::uint64_t heard = this->heard();
  WaitingClock::Clock::time_point heard_at = waiting.now();
  std::vector<pollfd> fds;
  while (true) {
    service();  // what came is read before anything is judged
    {
      std::lock_guard lock(state_.mu);
      if (until()) return true;  // before the loss: a refusal's reply comes with its notice
      if (!state_.lost.ok()) return state_.lost;
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return false;
    if (const std::uint64_t now_heard = this->heard(); now_heard != heard) {
      heard = now_heard;
      heard_at = waiting.now();
    }
    const Clock::duration silent_left = heard_at + kRemoteSilence - waiting.now();
    if (silent_left <= Clock::duration::zero()) return lose_silent();
    const Clock::duration timeout = std::min(silent_left, deadline - now);
    fds.clear();
    add_poll_fds(fds);
    fds.push_back({interrupt_fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), poll_timeout_ms(timeout)) < 0 && errno != EINTR) {
      return Status::FromErrno("poll for the remote forkfeedd", errno);
    }
    waiting.waited(now, Clock::now(), timeout);
    after_poll(fds.data());
    if (fds[kPollFds].revents != 0) return false;
  }
}

std::uint32_t RemoteLink::arrived() const {
  std::lock_guard lock(state_.mu);
  return receiver_.arrived();
}

std::uint32_t RemoteLink::free_slots() const {
  return receiver_.arena() ? receiver_.arena()->free_count() : 0;
}
std::uint32_t RemoteLink::slots() const { return receiver_.arena() ? receiver_.arena()->slots() : 0; }

Result<json> RemoteLink::request(MessageType type, const json& body) {
  return request(type, body, Clock::time_point::max());
}

Result<json> RemoteLink::request(MessageType type, const json& body, Clock::time_point deadline) {
  const Clock::time_point sent = Clock::now();
  if (Status s = send_request(type, body); !s.ok()) return s;
  auto done = progress_until([this] { return control_.has_reply(); }, -1, deadline);
  if (!done.ok()) return done.status();
  if (auto reply = take_reply()) return std::move(*reply);
  return state_.lose(
      "it did not answer within the " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - sent).count()) +
      " ms given");
}

std::optional<LinkDelivery> RemoteLink::pop() {
  std::lock_guard lock(state_.mu);
  if (!state_.lost.ok()) return std::nullopt;
  service();
  return receiver_.pop();
}

Result<bool> RemoteLink::wait(int interrupt_fd) {
  return progress_until([this] { return receiver_.next_ready(); }, interrupt_fd);
}

void RemoteLink::drop(const LinkDelivery& d) { receiver_.arena()->give_back(d.record.handle, false); }

std::unique_ptr<detail::SlotLease> RemoteLink::lend(const LinkDelivery& d) {
  receiver_.arena()->lent();
  return std::make_unique<RemoteLease>(receiver_.arena(), d.record.handle);
}

std::uint32_t RemoteLink::held() const { return receiver_.arena() ? receiver_.arena()->held() : 0; }
bool RemoteLink::pinned() const { return receiver_.arena() && receiver_.arena()->pinned(); }

}  // namespace forkfeed
