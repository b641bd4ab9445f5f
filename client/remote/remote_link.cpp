// RemoteLink: the client's end of a stream over UCX.
#include "client/remote/remote_link.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <vector>

#include "client/remote/receive_arena.h"
#include "client/remote/waiting_clock.h"
#include "protocol/stream_request.h"
#include "remote/net_address.h"
#include "remote/tcp_socket.h"
#include "remote/token.h"

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

void signal_fd(int fd) {
  const std::uint64_t one = 1;
  (void)!::write(fd, &one, sizeof one);
}

void drain_fd(int fd) {
  std::uint64_t count = 0;
  (void)!::read(fd, &count, sizeof count);
}

// The token file: RemoteDaemon::token_file, else $FORKFEED_TOKEN_FILE.
Result<std::string> client_token(const RemoteDaemon& daemon) {
  std::string path = daemon.token_file;
  if (path.empty()) {
    const char* env = std::getenv("FORKFEED_TOKEN_FILE");
    if (env == nullptr || *env == '\0') {
      return Status::InvalidArgument(
          "a remote forkfeedd asks for its token: set token_file (or FORKFEED_TOKEN_FILE) to a copy of the "
          "file "
          "it was started with (--token-file)");
    }
    path = env;
  }
  return read_token_file(path, "the token file");
}

}  // namespace

// One rendezvous receive in flight, for on_received.
struct RemoteLink::Receive {
  RemoteLink* link;
  std::uint64_t sequence;
};

RemoteLink::RemoteLink(std::string address, UniqueFd control, std::shared_ptr<UcxContext> context,
                       std::unique_ptr<UcxWorker> worker)
    : address_(std::move(address)),
      control_(std::move(control)),
      context_(std::move(context)),
      worker_(std::move(worker)) {}

RemoteLink::~RemoteLink() {
  if (!owner_.here()) {  // a fork's child: UCX, the stream and the link's thread are the parent's
    (void)progress_.release();
    return;
  }
  stop_progress();  // from here on, this thread alone calls the worker
  // Closing the control connection ends the gateway's session and its endpoint to this
  // worker, which ends the receives in flight. UCX must not destroy a worker with one
  // still pending (it asserts): a worker whose gateway never ended them (gone without a
  // word) is left, unused, to the end of the process.
  control_.reset();
  const Clock::time_point deadline = Clock::now() + kRemoteSilence;
  while (receiving_ > 0 && Clock::now() < deadline) {
    worker_->progress_and_arm();
    if (receiving_ == 0) break;
    pollfd p{worker_->event_fd(), POLLIN, 0};
    (void)::poll(&p, 1, 50);
  }
  if (receiving_ > 0) (void)worker_.release();
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
  auto token = client_token(daemon);
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
  for (const auto& [id, handler] :
       {std::pair{kDeliveryMessage, &on_delivery}, {kWelcomeMessage, &on_welcome}}) {
    if (Status s = link->worker_->set_am_handler(id, handler, link.get()); !s.ok()) return s;
  }
  for (UniqueFd* fd : {&link->news_fd_, &link->wake_fd_}) {
    *fd = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!fd->valid()) return Status::FromErrno("eventfd for a remote stream's thread", errno);
  }
  // The thread takes no signals: a trainer's Ctrl-C must reach the thread that waits in
  // next() (its poll returns EINTR), not this one. It inherits the mask in force here.
  sigset_t all, before;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    link->progress_ = std::make_unique<std::thread>(&RemoteLink::progress_loop, link.get());
  } catch (const std::system_error& e) {
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return Status::ResourceExhausted(std::string("cannot start a remote stream's thread (") + e.what() +
                                     "): is the process at its limit of threads (ulimit -u)?");
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  json hello{{"protocol", kProtocolVersion}, {"token", *token}, {"worker", bytes_to_json(*worker_address)}};
  if (const auto segment = link->context_->tcp_segment()) hello["ucx_tcp_segment"] = *segment;
  if (Status s = link->send_request(MessageType::kHello, hello); !s.ok()) return s;
  return link;
}

Result<bool> RemoteLink::opening(const json& request, int pin_device, json& opened) {
  std::lock_guard lock(mu_);
  if (phase_ == Phase::kOpen) return true;
  if (!lost_.ok() && !reply_) return lost_;  // a refusal's reply comes with its notice: it first
  if (phase_ == Phase::kHello) {
    auto reply = take_reply();
    if (!reply) return false;
    if (!reply->ok()) return reply->status();
    phase_ = Phase::kWelcome;
  }
  if (phase_ == Phase::kWelcome) {
    // Its welcome over UCX: the two workers' handshake is over, and batches can come.
    if (!welcomed_) return false;
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
  switch (phase_) {
    case Phase::kHello:
      return fail("the remote forkfeedd at " + address_ +
                  " took the connection but did not answer its hello" + within +
                  ": is its forkfeed-gateway (or its host) stopped or hung? (A gateway that was sent "
                  "wrong tokens from this address answers its next hellos up to " +
                  std::to_string(kWrongTokenMostWait.count()) + " s late: raise connect_timeout, or wait.)");
    case Phase::kWelcome:
      return fail("the remote forkfeedd at " + address_ +
                  " took the token, but nothing it sent over UCX reached "
                  "this process" +
                  within +
                  ": do UCX_TLS and UCX_NET_DEVICES allow a common transport on both "
                  "machines, and does a firewall let UCX's connections through?");
    case Phase::kOpening:
      return fail(
          "the remote forkfeedd at " + address_ + " took the token but did not open the stream" + within +
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
        "the remote forkfeedd at " + address_ +
        " sent no receive slot sizes (slots, slot_bytes); is it another forkfeed version?");
  }
  auto arena = ReceiveArena::create(context_, static_cast<std::uint32_t>(*slots), *slot_bytes, pin_device);
  if (!arena.ok()) return arena.status();
  arena_ = std::move(arena).value();
  send_credits();
  wake_progress();  // to watch the slots given back
  return Status::Ok();
}

Status RemoteLink::lose(const std::string& why) {
  return fail("lost the connection to the remote forkfeedd at " + address_ + ": " + why);
}

Status RemoteLink::fail(const std::string& message) {
  std::lock_guard lock(mu_);
  if (lost_.ok()) {
    lost_ = Status::Unavailable(message);
    news();
  }
  return lost_;
}

Status RemoteLink::check() {
  std::lock_guard lock(mu_);
  if (lost_.ok()) service();
  return lost_;
}

void RemoteLink::service() {
  std::lock_guard lock(mu_);
  read_control();
  send_credits();
}

void RemoteLink::progress_loop() {
  std::vector<pollfd> fds;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      const std::uint64_t before = news_;
      worker_->progress();
      send_credits();
      if (news_ != before) signal_fd(news_fd_.get());
      if (worker_->api().ucp_worker_arm(worker_->get()) == UCS_ERR_BUSY) continue;  // more came meanwhile
      fds = {{worker_->event_fd(), POLLIN, 0},
             {arena_ ? arena_->returned_fd() : -1, POLLIN, 0},
             {wake_fd_.get(), POLLIN, 0}};
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      spdlog::error("forkfeed: a remote stream's thread cannot poll: {}; it stops", std::strerror(errno));
      (void)fail("its thread could not poll: " + std::string(std::strerror(errno)));
      signal_fd(news_fd_.get());
      return;
    }
    for (std::size_t i : {1, 2}) {
      if (fds[i].revents != 0) drain_fd(fds[i].fd);  // the slots freed are credits, which the loop gives
    }
  }
}

void RemoteLink::wake_progress() { signal_fd(wake_fd_.get()); }

void RemoteLink::stop_progress() {
  if (!progress_) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_progress();
  progress_->join();
  progress_.reset();
}

void RemoteLink::send_credits() {
  if (!arena_ || !lost_.ok()) return;
  const std::uint32_t credits = arena_->take_credits();
  if (credits == 0) return;
  if (Status s = send_frame(control_.get(), MessageType::kCredit, json{{"count", credits}}.dump()); !s.ok()) {
    (void)lose("cannot send it credits: " + s.message());
  }
}

void RemoteLink::read_control() {
  pollfd p{control_.get(), POLLIN, 0};
  if (!lost_.ok() || ::poll(&p, 1, 0) != 1) return;
  // What came before the end is read first: a refusal's reply, the notice saying why.
  const Status filled = reader_.fill(control_.get());
  while (lost_.ok()) {
    auto frame = reader_.next();
    if (!frame.ok()) {
      (void)lose("it broke the protocol: " + frame.status().message());
      return;
    }
    if (!frame->has_value()) break;
    heard_ += 1;
    const Frame& f = **frame;
    switch (static_cast<MessageType>(f.type)) {
      case MessageType::kHeartbeat: break;
      case MessageType::kReply: reply_ = f.payload; break;
      case MessageType::kNotice: {  // the gateway's own word on why: nothing to add to it
        const json body = json::parse(f.payload, nullptr, false);
        const std::string why = body.is_object() && body.contains("error") && body["error"].is_string()
                                    ? body["error"].get<std::string>()
                                    : std::string("no reason given");
        if (lost_.ok())
          lost_ =
              Status::Unavailable("the remote forkfeedd at " + address_ + " ended the connection: " + why);
        break;
      }
      default: (void)lose("it sent a message of unknown type " + std::to_string(f.type));
    }
  }
  if (!filled.ok()) {
    (void)lose(filled.message().starts_with("connection closed")
                   ? "it closed the connection (its forkfeedd or forkfeed-gateway stopped or crashed)"
                   : filled.message());
  }
}

void RemoteLink::add_poll_fds(std::vector<pollfd>& fds) const {
  fds.push_back({news_fd_.get(), POLLIN, 0});
  fds.push_back({control_.get(), POLLIN, 0});
  fds.push_back({arena_ ? arena_->returned_fd() : -1, POLLIN, 0});
}

void RemoteLink::after_poll(const pollfd* mine) {
  for (std::size_t i : {0, 2}) {  // news, which service() and the waits read; credits, which it gives
    if (mine[i].revents != 0) drain_fd(mine[i].fd);
  }
}

Status RemoteLink::lose_silent() {
  return lose("no word from it for " + std::to_string(kRemoteSilence.count()) +
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
      std::lock_guard lock(mu_);
      if (until()) return true;  // before the loss: a refusal's reply comes with its notice
      if (!lost_.ok()) return lost_;
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

Status RemoteLink::want(std::uint64_t generation, std::span<const std::uint64_t> batches) {
  std::lock_guard lock(mu_);
  if (!lost_.ok()) return lost_;
  const json body{{"generation", generation}, {"batches", batches}};
  if (Status s = send_frame(control_.get(), MessageType::kWant, body.dump()); !s.ok()) {
    return lose("cannot send it the batches wanted: " + s.message());
  }
  return Status::Ok();
}

std::uint32_t RemoteLink::arrived() const {
  std::lock_guard lock(mu_);
  return static_cast<std::uint32_t>(
      std::count_if(arrivals_.begin(), arrivals_.end(), [](const auto& a) { return a.second.ready; }));
}

std::uint32_t RemoteLink::free_slots() const { return arena_ ? arena_->free_count() : 0; }
std::uint32_t RemoteLink::slots() const { return arena_ ? arena_->slots() : 0; }

Result<json> RemoteLink::request(MessageType type, const json& body) {
  return request(type, body, Clock::time_point::max());
}

Result<json> RemoteLink::request(MessageType type, const json& body, Clock::time_point deadline) {
  const Clock::time_point sent = Clock::now();
  if (Status s = send_request(type, body); !s.ok()) return s;
  auto done = progress_until([this] { return reply_.has_value(); }, -1, deadline);
  if (!done.ok()) return done.status();
  if (auto reply = take_reply()) return std::move(*reply);
  return lose("it did not answer within the " +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - sent).count()) +
              " ms given");
}

Status RemoteLink::send_request(MessageType type, const json& body) {
  std::lock_guard lock(mu_);
  if (!lost_.ok()) return lost_;
  std::string payload;
  try {
    payload = body.dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("cannot write the request to forkfeedd: ") + e.what());
  }
  reply_.reset();
  if (Status s = send_frame(control_.get(), type, payload); !s.ok()) {
    if (s.code() == Status::Code::kInvalidArgument) return s;  // too large: nothing was sent
    return lose("cannot send it a request: " + s.message());
  }
  return Status::Ok();
}

std::optional<Result<json>> RemoteLink::take_reply() {
  std::lock_guard lock(mu_);
  if (!reply_) return std::nullopt;
  json reply = json::parse(*std::exchange(reply_, std::nullopt), nullptr, false);
  if (!reply.is_object()) return lose("it sent a reply that is not a JSON object");
  try {
    if (Status s = reply_status(reply); !s.ok()) return s;
  } catch (const json::exception& e) {
    return lose(std::string("it sent a malformed reply: ") + e.what());
  }
  return reply;
}

std::optional<LinkDelivery> RemoteLink::pop() {
  std::lock_guard lock(mu_);
  if (!lost_.ok()) return std::nullopt;
  service();
  auto head = arrivals_.find(next_sequence_);
  if (head == arrivals_.end() || !head->second.ready) return std::nullopt;
  const Arrival arrival = head->second;
  arrivals_.erase(head);
  next_sequence_ += 1;
  LinkDelivery d{arrival.record, nullptr, 0};
  if (d.record.kind == DeliveryKind::kBatch) {
    d.record.handle = arrival.slot;
    // Read where the batches are (UCX wrote it through its own mapping of the slot).
    d.window = arena_->window();
    d.slot = std::uint64_t{arrival.slot} * arena_->slot_bytes();
    d.slot_bytes = arena_->slot_bytes();
    d.base = d.window->origin(d.slot) + d.slot;
    d.bytes = arrival.bytes;
  }
  return d;
}

Result<bool> RemoteLink::wait(int interrupt_fd) {
  return progress_until(
      [this] {
        auto head = arrivals_.find(next_sequence_);
        return head != arrivals_.end() && head->second.ready;
      },
      interrupt_fd);
}

void RemoteLink::drop(const LinkDelivery& d) { arena_->give_back(d.record.handle, false); }

std::unique_ptr<detail::SlotLease> RemoteLink::lend(const LinkDelivery& d) {
  arena_->lent();
  return std::make_unique<RemoteLease>(arena_, d.record.handle);
}

std::uint32_t RemoteLink::held() const { return arena_ ? arena_->held() : 0; }
bool RemoteLink::pinned() const { return arena_ && arena_->pinned(); }

ucs_status_t RemoteLink::on_welcome(void* arg, const void*, std::size_t, void*, std::size_t,
                                    const ucp_am_recv_param_t*) {
  auto* link = static_cast<RemoteLink*>(arg);
  link->welcomed_ = true;
  link->news();
  return UCS_OK;
}

ucs_status_t RemoteLink::on_delivery(void* arg, const void* header, std::size_t header_length, void* data,
                                     std::size_t length, const ucp_am_recv_param_t* param) {
  auto* link = static_cast<RemoteLink*>(arg);
  link->heard_ += 1;
  return link->accept_delivery(header, header_length, data, length, param);
}

ucs_status_t RemoteLink::accept_delivery(const void* header, std::size_t header_length, void* data,
                                         std::size_t length, const ucp_am_recv_param_t* param) {
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  const auto wire = read_delivery(header, header_length);
  const auto kind = wire ? static_cast<DeliveryKind>(wire->kind) : DeliveryKind{};
  if (!wire || wire->sequence < next_sequence_ || arrivals_.contains(wire->sequence) ||
      (kind != DeliveryKind::kBatch && kind != DeliveryKind::kEndOfPass && kind != DeliveryKind::kError &&
       kind != DeliveryKind::kEmpty) ||
      (kind != DeliveryKind::kBatch && rendezvous)) {
    (void)lose("it sent a malformed delivery");
    return UCS_OK;  // a rendezvous not received is dropped by UCX
  }
  Arrival& arrival = arrivals_[wire->sequence];
  if (kind != DeliveryKind::kBatch) {
    arrival.record = from_wire(*wire, std::string_view(static_cast<const char*>(data), length));
    arrival.ready = true;
    news();
    return UCS_OK;
  }
  arrival.record = from_wire(*wire, {});
  const std::optional<std::uint32_t> slot = arena_ ? arena_->take() : std::nullopt;
  if (!slot || length > arena_->slot_bytes()) {
    arrivals_.erase(wire->sequence);
    (void)lose(slot ? "it sent a batch larger than a receive slot" : "it sent a batch beyond its credits");
    if (slot) arena_->give_back(*slot, false);
    return UCS_OK;
  }
  arrival.slot = *slot;
  arrival.bytes = length;
  if (!rendezvous) {  // small enough to come eagerly
    std::memcpy(arena_->slot(*slot), data, length);
    arrival.ready = true;
    news();
    return UCS_OK;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.cb.recv_am = on_received;
  auto* receive = new Receive{this, wire->sequence};
  p.user_data = receive;
  p.memh = arena_->memh();
  ucs_status_ptr_t request =
      worker_->api().ucp_am_recv_data_nbx(worker_->get(), data, arena_->slot(*slot), length, &p);
  if (request == nullptr) {
    delete receive;
    arrival.ready = true;
    news();
  } else if (!UCS_PTR_IS_ERR(request)) {
    receiving_ += 1;
  } else {
    delete receive;
    (void)lose("receiving a batch failed: " + worker_->api().error(UCS_PTR_STATUS(request)));
  }
  return UCS_INPROGRESS;
}

void RemoteLink::on_received(void* request, ucs_status_t status, std::size_t, void* user_data) {
  std::unique_ptr<Receive> receive(static_cast<Receive*>(user_data));
  RemoteLink* link = receive->link;
  link->receiving_ -= 1;
  link->worker_->api().ucp_request_free(request);
  auto it = link->arrivals_.find(receive->sequence);
  if (status != UCS_OK) {
    (void)link->lose("receiving a batch failed: " + link->worker_->api().error(status));
  } else if (it != link->arrivals_.end()) {
    it->second.ready = true;
    link->news();
  }
}

}  // namespace forkfeed
