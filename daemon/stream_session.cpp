// StreamSession: the connection, its requests and the loop that serves its stream.
#include "daemon/stream_session.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "base/out_of_memory.h"
#include "base/printable.h"
#include "plan/slot_count.h"
#include "plan/stream_plan.h"
#include "protocol/stream_request.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

// A partial message or an unread reply holds the session at most this long.
constexpr timeval kSocketTimeout{2, 0};
// A connection that keeps sending nonsense is closed after this many errors.
constexpr std::uint32_t kMaxProtocolErrors = 64;

json ok_reply(json body = json::object()) {
  body["ok"] = true;
  return body;
}

std::string known_datasets(const DaemonConfig& config) {
  std::string names;
  for (const auto& [name, source] : config.datasets) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

}  // namespace

StreamSession::StreamSession(std::uint64_t id, Listener::Peer peer, const SessionContext& context)
    : id_(id),
      peer_(std::move(peer)),
      context_(context),
      handshake_(peer_.socket.get(), Handshake::Clock::now()) {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    // Out of threads (a connect flood, a low ulimit): refuse this one connection rather
    // than let the exception end the daemon.
    const std::string why = std::string("forkfeedd cannot start a thread for this connection (") + e.what() +
                            "); try again in a moment";
    spdlog::warn("refused a connection from pid {} (uid {}): {}", peer_.pid, peer_.uid, why);
    (void)send_frame(peer_.socket.get(), MessageType::kNotice, json{{"error", why}}.dump());
    handshake_.closing();
    peer_.socket.reset();
    finished_.store(true, std::memory_order_release);
  }
}

StreamSession::~StreamSession() {
  if (thread_.joinable()) thread_.join();
}

json StreamSession::stats() const {
  json stats;
  {
    std::lock_guard lock(stats_mu_);
    stats = stats_;
  }
  // The worker time as of now, not as of the stream's last delivery: a stream of big
  // batches delivers seldom, and its share of the pool would lag by a batch.
  std::lock_guard lock(stream_mu_);
  if (stream_ && stats.is_object()) stats["worker_ns"] = stream_->worker_ns();
  return stats;
}

Status StreamSession::reply(const json& body, std::span<const int> fds) {
  return send_frame(peer_.socket.get(), MessageType::kReply,
                    body.dump(-1, ' ', false, json::error_handler_t::replace), fds);
}

void StreamSession::run() {
  ::setsockopt(peer_.socket.get(), SOL_SOCKET, SO_RCVTIMEO, &kSocketTimeout, sizeof kSocketTimeout);
  ::setsockopt(peer_.socket.get(), SOL_SOCKET, SO_SNDTIMEO, &kSocketTimeout, sizeof kSocketTimeout);
  // Nothing may escape this thread: an exception here would end the whole daemon. What a
  // request needs is caught in handle_request(); this is the backstop for serving.
  try {
    serve();
  } catch (const std::exception& e) {
    const std::string why =
        std::string("forkfeedd could not go on serving this connection: ") +
        (dynamic_cast<const std::bad_alloc*>(&e) != nullptr ? "out of memory" : printable(e.what()));
    spdlog::error("stream {} (pid {}): {}", id_, peer_.pid, why);
    (void)send_frame(peer_.socket.get(), MessageType::kNotice, json{{"error", why}}.dump());
  }
  close_stream();
  handshake_.closing();  // before the socket goes: the server must not touch it after
  peer_.socket.reset();  // the client sees the end now, not when the server reaps this session
  finished_.store(true, std::memory_order_release);
}

void StreamSession::close_stream() {
  if (!stream_) return;
  {
    std::lock_guard lock(stats_mu_);
    stats_ = nullptr;
  }
  std::lock_guard lock(stream_mu_);
  stream_.reset();  // detaches from the pool, unmaps the arena, gives back its admission
}

void StreamSession::wake(bool stopping) {
  std::lock_guard lock(stream_mu_);
  if (!stream_) return;  // and while there is one, the socket is open (closed after the stream)
  pollfd p{peer_.socket.get(), POLLIN | POLLRDHUP, 0};
  if (stopping || ::poll(&p, 1, 0) == 1) stream_->interrupt();
}

void StreamSession::serve() {
  while (true) {
    if (stream_) stream_->drain_returns();
    const bool produce_now = stream_ && stream_->can_produce();
    pollfd fds[3] = {{peer_.socket.get(), POLLIN, 0}, {context_.stop_fd, POLLIN, 0}, {-1, POLLIN, 0}};
    if (stream_) fds[2].fd = stream_->returned_fd();
    if (::poll(fds, 3, produce_now ? 0 : -1) < 0 && errno != EINTR) {
      spdlog::error("stream {}: poll failed: {}", id_, std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) {
      const json notice = {{"error", "forkfeedd is shutting down"}};
      (void)send_frame(peer_.socket.get(), MessageType::kNotice, notice.dump());
      break;
    }
    if (fds[0].revents != 0) {
      if (!handle_request()) break;
      continue;  // the request may have changed what to produce
    }
    if (fds[2].revents != 0) ConsumerChannel::clear(stream_->returned_fd());
    if (produce_now) {
      stream_->produce();
      publish_stats();
    }
  }
}

bool StreamSession::handle_request() {
  auto frame = recv_frame(peer_.socket.get(), false);
  // Whatever the read gave, once the server ended the handshake (which cut it short).
  if (!handshake_.begin_request()) return refuse_ended_handshake();
  if (!frame.ok()) {
    // A frame that breaks the protocol gets a reason; either way the byte stream is lost.
    if (frame.status().code() == Status::Code::kInvalidArgument) (void)reply(error_reply(frame.status()));
    if (stream_ || !frame.status().message().starts_with("connection closed")) {
      spdlog::info("stream {} (pid {}): {}", id_, peer_.pid, frame.status().message());
    }
    return false;
  }
  Answer a;
  std::vector<UniqueFd> fds;
  try {
    a = answer_request(*frame, fds);
  } catch (const std::bad_alloc&) {
    // Whatever the request was building is freed by now: the reply can be made.
    fds.clear();
    const Status s =
        out_of_memory("in forkfeedd, answering a request of type " + std::to_string(frame->type));
    spdlog::warn("connection {} (pid {}): {}", id_, peer_.pid, s.message());
    a = Answer{Answer::Then::kReply, error_reply(s)};
  }
  if (a.then == Answer::Then::kHandshakeEnded) return refuse_ended_handshake();
  if (a.then == Answer::Then::kClose) return false;
  if (a.then == Answer::Then::kNone)
    return handshake_.end_request(stream_ != nullptr) || refuse_ended_handshake();
  const json& answer = a.reply;
  if (!answer["ok"].get<bool>() && ++protocol_errors_ >= kMaxProtocolErrors) {
    (void)reply(error_reply(Status::InvalidArgument("too many bad requests; closing the connection")));
    return false;
  }
  std::vector<int> raw;
  for (const UniqueFd& fd : fds) raw.push_back(fd.get());
  const bool sent = reply(answer, raw).ok();
  // The server may have ended the handshake while the reply was being sent (to a peer
  // that reads slowly, past the deadline): then the connection goes.
  if (!handshake_.end_request(stream_ != nullptr)) return refuse_ended_handshake();
  return sent;
}

StreamSession::Answer StreamSession::answer_request(const Frame& frame, std::vector<UniqueFd>& fds) {
  const json body = json::parse(frame.payload, nullptr, false);
  json answer;
  if (body.is_discarded() || !body.is_object()) {
    answer = error_reply(Status::InvalidArgument("the message body must be a JSON object"));
  } else {
    switch (static_cast<MessageType>(frame.type)) {
      case MessageType::kOpenStream:
        if (stream_) {
          answer = error_reply(Status::InvalidArgument(
              "a stream is already open on this connection; open another connection for another"));
        } else {
          if (!handshake_.begin_opening()) return Answer{Answer::Then::kHandshakeEnded, {}};
          answer = open_stream(body, fds);
        }
        break;
      case MessageType::kSeek: answer = seek(body); break;
      case MessageType::kWant:
        // Unanswered: a bad one ends the connection, with a notice saying why.
        if (Status s = stream_ ? stream_->want(body) : Status::InvalidArgument("want: open a stream first");
            !s.ok()) {
          spdlog::info("stream {} (pid {}): {}", id_, peer_.pid, s.message());
          (void)send_frame(peer_.socket.get(), MessageType::kNotice, json{{"error", s.message()}}.dump());
          return Answer{Answer::Then::kClose, {}};
        }
        return Answer{Answer::Then::kNone, {}};
      case MessageType::kStats:
        if (stream_) publish_stats();
        answer = ok_reply(stream_ ? stats() : context_.daemon_stats());
        break;
      case MessageType::kHello: answer = ok_reply(json{{"protocol", kProtocolVersion}}); break;
      case MessageType::kClose:
        // The stream's workers and memory are given back before the reply, so that a
        // client that closes and opens again at once finds them free.
        close_stream();
        (void)reply(ok_reply());
        return Answer{Answer::Then::kClose, {}};
      default:
        answer = error_reply(Status::InvalidArgument("unknown message type " + std::to_string(frame.type)));
    }
  }
  return Answer{Answer::Then::kReply, std::move(answer)};
}

bool StreamSession::refuse_ended_handshake() {
  const HandshakeLimits& limits = context_.config->handshake;
  const std::string why =
      handshake_.ended() == Handshake::End::kTimedOut
          ? "forkfeedd closed this connection: no complete request within " +
                std::to_string(limits.timeout.count()) +
                " ms (handshake_timeout_ms) of connecting, replies included; send requests at once, "
                "or open a stream"
          : "forkfeedd closed this connection to make room for a new one: it had sent no request, and "
            "forkfeedd keeps at most " +
                std::to_string(limits.max_pending_connections) +
                " connections without a stream (max_pending_connections); send requests at once";
  spdlog::info("connection {} (pid {}): {}", id_, peer_.pid, why);
  // Without blocking: a peer that reads nothing must not hold this thread.
  const int flags = ::fcntl(peer_.socket.get(), F_GETFL);
  ::fcntl(peer_.socket.get(), F_SETFL, flags | O_NONBLOCK);
  (void)send_frame(peer_.socket.get(), MessageType::kNotice, json{{"error", why}}.dump());
  return false;
}

json StreamSession::open_stream(const json& body, std::vector<UniqueFd>& fds) {
  const DaemonConfig& config = *context_.config;
  json merged = config.defaults;
  merged.update(body);
  auto request = parse_stream_request(merged);
  if (!request.ok()) return error_reply(request.status());
  LoaderOptions options = request->stream.loader;
  const std::string& name = request->stream.dataset;
  if (!name.empty()) {
    const auto it = config.datasets.find(name);
    if (it == config.datasets.end()) {
      return error_reply(Status::NotFound("forkfeedd has no dataset named '" + printable(name) +
                                          "'; it knows " + known_datasets(config)));
    }
    if (DatasetSource::of(options).count() > 0) {
      return error_reply(Status::InvalidArgument("give a dataset name or a path, not both"));
    }
    it->second.apply_to(options);
  } else if (peer_.uid != ::geteuid()) {
    return error_reply(Status::InvalidArgument("user " + std::to_string(peer_.uid) +
                                               " may open only the datasets named in forkfeedd's config (" +
                                               known_datasets(config) + ")"));
  }
  options.log_level = config.log_level;
  options.start_method = StartMethod::kSpawn;  // this process has threads: never fork it
  options.pin_memory_device = -1;
  auto plan = StreamPlan::of(options);  // the size and dtype that admission weighs
  if (!plan.ok()) return error_reply(plan.status());
  options = plan->options();
  if (slot_count(options) > kChannelCapacity) {
    return error_reply(
        Status::InvalidArgument("workers x prefetch + 1 = " + std::to_string(slot_count(options)) +
                                " batch slots, over forkfeedd's " + std::to_string(kChannelCapacity) +
                                " per stream; lower workers or prefetch"));
  }
  auto ticket = context_.admission->admit(options);  // caps the workers it keeps busy, not its slots
  if (!ticket.ok()) return error_reply(ticket.status());
  json about{{"pid", peer_.pid},
             {"uid", peer_.uid},
             {"dataset", name.empty() ? DatasetSource::of(options).path() : name},
             {"rank", options.rank},
             {"world_size", options.world_size},
             {"batch_size", options.batch_size},
             {"workers", ticket->workers()}};
  auto opened = ServedStream::open(id_, *plan, request->state, request->demand, context_.pool,
                                   std::move(ticket).value(), std::move(about));
  if (!opened.ok()) return error_reply(opened.status());
  {
    std::lock_guard lock(stream_mu_);
    stream_ = std::move(opened->stream);
  }
  fds = std::move(opened->fds);
  publish_stats();
  return ok_reply(std::move(opened->reply));
}

json StreamSession::seek(const json& body) {
  if (!stream_) return error_reply(Status::InvalidArgument("open a stream before seeking"));
  auto reply = stream_->seek(body);
  return reply.ok() ? ok_reply(std::move(reply).value()) : error_reply(reply.status());
}

void StreamSession::publish_stats() {
  json stats = stream_->stats();
  std::lock_guard lock(stats_mu_);
  stats_ = std::move(stats);
}

}  // namespace forkfeed
