// RemoteSession: the greeting, the stream's requests, deliveries by credit.
#include "gateway/remote_session.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dataset/dataset_source.h"
#include "protocol/consumer_channel.h"
#include "protocol/stream_request.h"
#include "remote/am_send.h"
#include "remote/remote_wire.h"
#include "remote/token.h"
#include "transport/arena_layout.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

// A client that keeps sending bad requests is disconnected after this many.
constexpr std::uint32_t kMaxBadRequests = 16;
// A reply or a beat that cannot be written in this long ends the session: a client that
// reads nothing must not hold the gateway's one thread.
constexpr timeval kSendTimeout{0, 200 * 1000};

// The network path holds a batch's daemon slot while it crosses, and a receive slot from
// its credit until the trainer drops it: with only the slots a local client's options
// make (workers x prefetch + 1), a stream of few slots waits on its transfers (one worker:
// 0.57x the Unix socket, tools/compare/remote_stream.py --stream-workers 1). The gateway
// asks the daemon's stream for at least this many more — one more batch in flight a
// worker, two for one worker — where the daemon's bounds allow; the client's receive
// slots follow the daemon's.
constexpr std::uint32_t kTransitSlots = 2;

json with_transit_slots(json body, const LoaderOptions& o) {
  if (o.workers == 0) return body;  // the daemon refuses it, naming the field
  const std::uint64_t prefetch = o.prefetch + (kTransitSlots + o.workers - 1) / o.workers;
  if (o.workers * prefetch + 1 <= std::min(kRingCapacity, kChannelCapacity)) body["prefetch"] = prefetch;
  return body;
}

json ok_reply(json body = json::object()) {
  body["ok"] = true;
  return body;
}

}  // namespace

RemoteSession::RemoteSession(std::string peer, std::string address, UniqueFd control, SendWorkers& workers,
                             const GatewaySettings& settings, TokenThrottle& throttle)
    : peer_(std::move(peer)),
      address_(std::move(address)),
      control_(std::move(control)),
      workers_(workers),
      settings_(settings),
      throttle_(throttle),
      accepted_(Clock::now()),
      last_beat_(accepted_) {
  ::setsockopt(control_.get(), SOL_SOCKET, SO_SNDTIMEO, &kSendTimeout, sizeof kSendTimeout);
}

RemoteSession::~RemoteSession() {
  if (closing_ && closing_->request != nullptr) workers_.api().ucp_request_free(closing_->request);
  endpoint_.close(!endpoint_failed_);  // only when the gateway itself is going
  if (phase_ == Phase::kStreaming) spdlog::info("remote client {}: stream closed", peer_);
  // daemon_ goes after: closing its connection closes the daemon's stream.
}

void RemoteSession::reply(const json& body) {
  const std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  if (Status s = send_frame(control_.get(), MessageType::kReply, text); !s.ok())
    end("cannot answer: " + s.message());
}

void RemoteSession::refuse(const Status& status) {
  reply(error_reply(status));
  if (++bad_requests_ >= kMaxBadRequests) end("too many bad requests");
}

void RemoteSession::end(const std::string& why) {
  if (finished_) return;
  finished_ = true;
  spdlog::info("remote client {}: {}", peer_, why);
  if (control_.valid()) {
    (void)send_frame(control_.get(), MessageType::kNotice,
                     json{{"error", why}}.dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

void RemoteSession::on_control() {
  if (finished_) return;
  const Status filled = reader_.fill(control_.get());  // what came before a close counts
  while (!finished_) {
    auto frame = reader_.next();
    if (!frame.ok()) return end("broke the protocol: " + frame.status().message());
    if (!frame->has_value()) break;
    on_frame(**frame);
  }
  if (!filled.ok()) {
    control_.reset();  // gone: nothing more to tell it
    end(filled.message().starts_with("connection closed") ? "disconnected" : filled.message());
  }
}

void RemoteSession::on_frame(const Frame& frame) {
  const json body = json::parse(frame.payload, nullptr, false);
  if (!body.is_object()) return refuse(Status::InvalidArgument("the message body must be a JSON object"));
  const auto type = static_cast<MessageType>(frame.type);
  if (phase_ == Phase::kGreeting) {
    if (held_hello_) return end("sent another message before its hello was answered");
    if (type != MessageType::kHello) {
      refuse(Status::FailedPrecondition("forkfeedd asks remote clients for a hello with the token first"));
      return end("refused: no hello");
    }
    return greet(body);
  }
  if (type == MessageType::kCredit) {
    auto count = get_uint(body, "count", kChannelCapacity);
    if (!count.ok()) return end("sent a bad credit: " + count.status().message());
    credits_ += *count;
    if (credits_ > kChannelCapacity) return end("sent more credits than it has receive slots");
    return pump();
  }
  if (type == MessageType::kWant) {  // unanswered, so never pending: on to the daemon, which checks it
    if (phase_ != Phase::kStreaming) return end("sent a want before its stream was open");
    if (Status s = daemon_->send(type, body); !s.ok()) return end(s.message());
    return;
  }
  if (pending_) return end("sent a request before the previous one was answered");
  switch (type) {
    case MessageType::kOpenStream:
      if (phase_ == Phase::kStreaming) {
        return refuse(Status::InvalidArgument(
            "a stream is already open on this connection; open another connection for another"));
      }
      if (Status s = open_stream(body); !s.ok()) {
        daemon_.reset();
        return refuse(s);
      }
      pending_ = type;
      return;
    case MessageType::kSeek:
    case MessageType::kStats:
      if (phase_ != Phase::kStreaming) return refuse(Status::InvalidArgument("open a stream first"));
      return forward(type, body);
    case MessageType::kClose:
      if (phase_ != Phase::kStreaming) {
        reply(ok_reply());
        return end("closed");
      }
      return forward(type, body);
    case MessageType::kHello: return reply(ok_reply(json{{"protocol", kProtocolVersion}}));
    default: return refuse(Status::InvalidArgument("unknown message type " + std::to_string(frame.type)));
  }
}

void RemoteSession::greet(const json& body) {
  // Guessing is slowed by address, not by connection: a hello from an address that just
  // sent a wrong token waits (tick() checks it in its turn), whatever token it holds.
  if (!throttle_.may_check(address_, Clock::now())) {
    held_hello_ = body;
    return;
  }
  check_hello(body);
}

void RemoteSession::check_hello(const json& body) {
  const bool token = body.contains("token") && body["token"].is_string() &&
                     tokens_equal(body["token"].get<std::string>(), settings_.token);
  if (!token) {
    const auto wait = throttle_.wrong(address_, Clock::now());
    refuse(Status::FailedPrecondition(
        "forkfeedd refused the token: give the remote client the file this forkfeedd was started with "
        "(--token-file), as token_file or FORKFEED_TOKEN_FILE"));
    return end("refused: a wrong token (the next hello from its address is checked in " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) +
               " ms at the "
               "earliest)");
  }
  auto worker = bytes_from_json(body, "worker");
  if (!worker.ok() || worker->empty() || worker->size() > 64 * 1024) {
    refuse(Status::InvalidArgument("the hello lacks the client's UCX worker address"));
    return end("refused: no worker address");
  }
  std::optional<std::uint64_t> segment;  // absent: an older client, or one without tcp
  if (const auto it = body.find("ucx_tcp_segment"); it != body.end()) {
    if (!it->is_number_unsigned()) {
      refuse(Status::InvalidArgument("the hello's ucx_tcp_segment is not a size in bytes"));
      return end("refused: a malformed hello");
    }
    segment = it->get<std::uint64_t>();
  }
  auto sender = workers_.for_client(segment);
  if (!sender.ok()) {
    refuse(sender.status());
    return end("refused: " + sender.status().message());
  }
  worker_ = *sender;
  auto endpoint =
      UcxEndpoint::connect(*worker_, *worker, settings_.on_endpoint_error, settings_.on_endpoint_error_arg);
  if (!endpoint.ok()) {
    refuse(Status::Unavailable(
        "forkfeed-gateway cannot reach this client over UCX: " + endpoint.status().message() +
        " (check UCX_TLS and UCX_NET_DEVICES on both sides)"));
    return end("unreachable over UCX");
  }
  endpoint_ = std::move(endpoint).value();
  phase_ = Phase::kGreeted;
  send_am(*worker_, endpoint_.get(), kWelcomeMessage, nullptr, 0, {}, UCP_AM_SEND_FLAG_EAGER);
  reply(ok_reply(json{{"protocol", kProtocolVersion}}));
}

Status RemoteSession::open_stream(const json& body, bool plain) {
  auto request = parse_stream_request(body);
  if (!request.ok()) return request.status();
  if (request->stream.dataset.empty() || DatasetSource::of(request->stream.loader).count() > 0) {
    return Status::InvalidArgument(
        "forkfeedd serves remote clients only the datasets named in its config (--dataset NAME=...), never a "
        "path: give the dataset's name");
  }
  // No hello: the open_stream's reply, read when it comes, proves the daemon answers. A
  // connect the daemon does not take at once is an error, not a wait for everyone.
  auto connection = DaemonConnection::open(settings_.daemon_socket, std::chrono::milliseconds(200));
  if (!connection.ok()) return connection.status();
  daemon_.emplace(std::move(connection).value());
  json forwarded = plain ? body : with_transit_slots(body, request->stream.loader);
  if (forwarded != body) as_asked_ = body;
  return daemon_->send_request(MessageType::kOpenStream, forwarded);
}

void RemoteSession::forward(MessageType type, const json& body) {
  if (Status s = daemon_->send_request(type, body); !s.ok()) return end(s.message());
  pending_ = type;
}

void RemoteSession::on_daemon() {
  if (!daemon_ || finished_) return;
  if (!pending_) {  // unasked: a notice, or the daemon closed the stream
    if (Status s = daemon_->check(); !s.ok()) {
      // Asked to close, forkfeedd ends the stream's connection: expected, not a loss.
      if (closing_) return daemon_.reset();
      end(s.message());
    }
    return;
  }
  auto answer = daemon_->receive_reply();
  const MessageType asked = *std::exchange(pending_, std::nullopt);
  std::optional<json> as_asked = std::exchange(as_asked_, std::nullopt);  // answered now, either way
  if (!answer.ok()) {
    // An {"ok":false} reply is the daemon's answer; a lost connection ends the client's.
    if (!daemon_->lost().ok()) return end(answer.status().message());
    if (asked == MessageType::kOpenStream) {
      daemon_.reset();
      // The transit slots did not fit the daemon's memory: the stream as asked, as a
      // local client's would be (slower if its slots are few, never refused for them).
      if (as_asked && answer.status().code() == Status::Code::kResourceExhausted) {
        if (Status s = open_stream(*as_asked, true); !s.ok()) {
          daemon_.reset();
          return reply(error_reply(s));
        }
        pending_ = asked;
        return;
      }
    }
    return reply(error_reply(answer.status()));
  }
  switch (asked) {
    case MessageType::kOpenStream:
      if (Status s = attach_stream(*answer); !s.ok()) {
        daemon_.reset();  // closes the daemon's stream
        return reply(error_reply(s));
      }
      phase_ = Phase::kStreaming;
      break;
    case MessageType::kSeek:
      if (auto g = get_uint(answer->body, "generation", ~std::uint64_t{0}); g.ok()) generation_ = *g;
      break;
    case MessageType::kClose:
      // Flushed while the client is there (UCX 1.13's tcp transport crashed, now and
      // then, when a live endpoint was forced shut under traffic).
      closing_ = Closing{answer->body, endpoint_.start_close(true), Clock::now() + kHeartbeatInterval * 2};
      return;
    default: break;
  }
  reply(answer->body);
  pump();
}

Status RemoteSession::attach_stream(DaemonConnection::Reply& answer) {
  auto opened = parse_stream_opened(answer.body);
  if (!opened.ok()) return opened.status();
  auto client = ClientStream::attach(std::move(answer.fds));
  if (!client.ok()) return client.status();
  const SlotWindow& arena = (*client)->arena();
  auto registered =
      UcxMemory::map(worker_->context(), const_cast<std::byte*>(arena.data()), arena.size(), true);
  if (!registered.ok()) return registered.status();
  stream_ = std::make_shared<const SharedStream>(
      SharedStream{std::move(client).value(), std::move(registered).value()});
  sample_bytes_ = sample_bytes(opened->dtype, opened->size);
  batch_size_ = opened->order.batch_size;
  generation_ = opened->generation;
  const std::optional<std::uint64_t> segment = worker_->context()->tcp_segment();
  spdlog::info("remote client {}: stream {} opened ({} slots of {:.1f} MiB{})", peer_, opened->stream,
               opened->slots, opened->slot_bytes / 1048576.0,
               segment ? ", over tcp in segments of " + std::to_string(*segment / 1024) + " KiB" : "");
  return Status::Ok();
}

void RemoteSession::pump() {
  if (!stream_ || finished_ || !endpoint_.valid()) return;  // not while the endpoint closes
  ClientStream& client = *stream_->client;
  ConsumerChannel::clear(client.channel().delivered_fd());
  while (auto d = client.channel().block().deliveries.try_pop()) queued_.push_back(*d);
  while (!queued_.empty()) {
    const DeliveryRecord& d = queued_.front();
    if (d.generation < generation_) {  // its pass was sought away: the client would drop it
      if (d.kind == DeliveryKind::kBatch) client.give_back(d.handle, d.tag, false);
      queued_.pop_front();
      continue;
    }
    if (d.kind == DeliveryKind::kBatch) {
      if (credits_ == 0) return;
      if (!batch_delivery_fits(d, client.arena().size(), sample_bytes_, batch_size_)) {
        return end("forkfeedd delivered a batch outside its arena; is it another forkfeed version?");
      }
      credits_ -= 1;
      const BatchSpan span = batch_span(d);
      const RemoteDelivery head = to_wire(d, sequence_++, span);
      send_am(*worker_, endpoint_.get(), kDeliveryMessage, &head, sizeof head,
              AmPayload{client.arena().data() + span.offset, span.bytes, stream_->registered.get(), {}},
              UCP_AM_SEND_FLAG_RNDV, [stream = stream_, handle = d.handle, tag = d.tag](ucs_status_t) {
                stream->client->give_back(handle, tag, false);
              });
    } else {
      const RemoteDelivery head = to_wire(d, sequence_++, {});
      send_am(*worker_, endpoint_.get(), kDeliveryMessage, &head, sizeof head,
              AmPayload{.owned = std::string(d.message, ::strnlen(d.message, kDeliveryMessageBytes))},
              UCP_AM_SEND_FLAG_EAGER);
    }
    queued_.pop_front();
  }
}

void RemoteSession::tick(Clock::time_point now) {
  if (finished_) return;
  if (closing_) {
    const bool done = closing_->request == nullptr ||
                      workers_.api().ucp_request_check_status(closing_->request) != UCS_INPROGRESS;
    if (!done && now < closing_->deadline) return;
    reply(closing_->reply);
    return end("closed");
  }
  if (held_hello_ && throttle_.may_check(address_, now)) {
    const json hello = *std::exchange(held_hello_, std::nullopt);
    check_hello(hello);
    if (finished_) return;
  }
  // A held hello came in time: it waits for its turn, not for the greeting timeout.
  if (phase_ == Phase::kGreeting && !held_hello_ && now - accepted_ > settings_.greeting_timeout) {
    return end("no hello with the token within " + std::to_string(settings_.greeting_timeout.count()) +
               " ms");
  }
  if (now - last_beat_ >= kHeartbeatInterval) {
    last_beat_ = now;
    if (Status s = send_frame(control_.get(), MessageType::kHeartbeat, "{}"); !s.ok()) end(s.message());
  }
}

}  // namespace forkfeed
