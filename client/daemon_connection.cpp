// DaemonConnection: the client's socket to forkfeedd.
#include "client/daemon_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/printable.h"
#include "protocol/socket_address.h"
#include "protocol/stream_request.h"

namespace forkfeed {

namespace {

using Clock = std::chrono::steady_clock;

// How long a client whose write failed waits for the daemon's reason: the daemon sends
// it right after it stops reading.
constexpr int kReasonWaitMs = 2000;

// SO_RCVTIMEO and SO_SNDTIMEO (which connect() also obeys); zero: none.
void set_timeouts(int socket, std::chrono::milliseconds timeout) {
  const timeval tv{static_cast<time_t>(timeout.count() / 1000),
                   static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// The reason in a notice frame; nullopt for other frames.
std::optional<std::string> notice_reason(const Frame& frame) {
  if (frame.type != static_cast<std::uint16_t>(MessageType::kNotice)) return std::nullopt;
  const auto body = nlohmann::json::parse(frame.payload, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    return body["error"].get<std::string>();
  }
  return std::string("it sent a notice");
}

bool timed_out(const Status& s) { return s.code() == Status::Code::kDeadlineExceeded; }

}  // namespace

namespace {

// "forkfeedd at PATH did not WHAT within N ms: is forkfeedd running and responsive? ..."
Status no_answer(const std::string& socket_path, std::chrono::milliseconds timeout, const std::string& what) {
  return Status::IoError("forkfeedd at " + socket_path + " did not " + what + " within " +
                         std::to_string(timeout.count()) +
                         " ms: is forkfeedd running and responsive? (`forkfeed-ctl --socket " + socket_path +
                         " stats` asks it; a daemon that is only busy needs a longer timeout)");
}

}  // namespace

Result<DaemonConnection> DaemonConnection::open(const std::string& socket_path,
                                                std::chrono::milliseconds timeout) {
  const Result<sockaddr_un> address =
      unix_socket_address(socket_path, "forkfeedd socket path", "start forkfeedd on a shorter one");
  if (!address.ok()) return address.status();
  const sockaddr_un& addr = address.value();
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno("socket for forkfeedd", errno);
  set_timeouts(fd.get(), timeout);  // a daemon that accepts nothing fills its backlog: connect() waits
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EINPROGRESS) return no_answer(socket_path, timeout, "take the connection");
    return Status::FromErrno("cannot connect to forkfeedd at " + socket_path +
                                 " (is it running? start it with: forkfeedd --socket " + socket_path + ")",
                             err);
  }
  set_timeouts(fd.get(), std::chrono::milliseconds(0));
  return DaemonConnection(std::move(fd), socket_path);
}

Result<DaemonConnection> DaemonConnection::connect(const std::string& socket_path,
                                                   std::chrono::milliseconds timeout,
                                                   RequestTimeout requests) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const auto time_left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  const auto refused = [&](const std::string& why) {
    return Status::IoError("forkfeedd at " + socket_path + " refused the connection: " + why);
  };
  auto opened = open(socket_path, timeout);
  if (!opened.ok()) return opened.status();
  DaemonConnection connection = std::move(opened).value();
  // The hello: proves that a daemon answers before anyone waits on it without a timeout.
  set_timeouts(connection.fd(), time_left());
  if (Status s = send_frame(connection.fd(), MessageType::kHello, "{}"); !s.ok()) {
    if (auto why = connection.reason_after_failed_write()) return refused(*why);
    return timed_out(s) ? no_answer(socket_path, timeout, "take the handshake") : refused(s.message());
  }
  set_timeouts(connection.fd(), time_left());
  auto frame = recv_frame(connection.fd(), false);
  if (!frame.ok()) {
    if (timed_out(frame.status())) return no_answer(socket_path, timeout, "answer the handshake");
    return refused(frame.status().message().starts_with("connection closed")
                       ? "it closed the connection without a reason"
                       : frame.status().message());
  }
  if (auto why = notice_reason(*frame)) return refused(*why);
  // Any well-formed reply means a daemon answered: one from before the hello answers it
  // with an error ("unknown message type"), and the protocol version is the same.
  const auto body = nlohmann::json::parse(frame->payload, nullptr, false);
  const bool answered = frame->type == static_cast<std::uint16_t>(MessageType::kReply) && body.is_object() &&
                        body.contains("ok") && body["ok"].is_boolean();
  if (!answered) {
    return Status::InvalidArgument("forkfeedd at " + socket_path + " did not take this client's hello (" +
                                   frame->payload.substr(0, 200) +
                                   "); use forkfeed and forkfeedd of one release");
  }
  const bool keep = requests == RequestTimeout::kSameAsConnect;
  connection.request_timeout_ = keep ? timeout : std::chrono::milliseconds(0);
  set_timeouts(connection.fd(), connection.request_timeout_);
  return connection;
}

Status DaemonConnection::lose(const std::string& why) {
  if (lost_.ok()) {
    lost_ =
        Status::Unavailable("lost the connection to forkfeedd at " + path_ + ": " + why +
                            "; restart the daemon if it is down, then connect again with the last state() to "
                            "continue exactly");
  }
  return lost_;
}

Status DaemonConnection::read_unasked() {
  auto frame = recv_frame(socket_.get(), false);
  if (!frame.ok()) {
    const bool closed = frame.status().message().starts_with("connection closed");
    return lose(closed ? "the daemon closed it (stopped or crashed)" : frame.status().message());
  }
  if (auto why = notice_reason(*frame)) return lose(*why);
  return lose("it sent a message nobody asked for (type " + std::to_string(frame->type) + ")");
}

std::optional<std::string> DaemonConnection::reason_after_failed_write() {
  pollfd p{socket_.get(), POLLIN, 0};
  if (::poll(&p, 1, kReasonWaitMs) != 1) return std::nullopt;
  set_timeouts(socket_.get(), std::chrono::milliseconds(kReasonWaitMs));  // the connection is over anyway
  auto frame = recv_frame(socket_.get(), false);
  return frame.ok() ? notice_reason(*frame) : std::nullopt;
}

Status DaemonConnection::check() {
  if (!lost_.ok()) return lost_;
  pollfd p{socket_.get(), POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) return read_unasked();
  return Status::Ok();
}

Result<DaemonConnection::Reply> DaemonConnection::request(MessageType type, const nlohmann::json& body) {
  if (Status s = send_request(type, body); !s.ok()) return s;
  return receive_reply();
}

Status DaemonConnection::send_request(MessageType type, const nlohmann::json& body) {
  if (Status s = check(); !s.ok()) return s;
  return send(type, body);
}

Status DaemonConnection::send(MessageType type, const nlohmann::json& body) {
  if (!lost_.ok()) return lost_;
  std::string payload;
  try {
    payload = body.dump();  // strings go as bytes_to_json() makes them; this is the backstop
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("cannot write the request to forkfeedd: ") +
                                   printable(e.what()));
  }
  if (Status s = send_frame(socket_.get(), type, payload); !s.ok()) {
    if (auto why = reason_after_failed_write()) return lose(*why);
    return lose(s.message());
  }
  return Status::Ok();
}

Result<DaemonConnection::Reply> DaemonConnection::receive_reply() {
  if (!lost_.ok()) return lost_;
  auto frame = recv_frame(socket_.get(), true);
  if (!frame.ok()) {
    if (timed_out(frame.status())) {
      return lose("it did not answer within " + std::to_string(request_timeout_.count()) + " ms");
    }
    const bool closed = frame.status().message().starts_with("connection closed");
    return lose(closed ? "the daemon closed it (stopped or crashed)" : frame.status().message());
  }
  if (auto why = notice_reason(*frame)) return lose(*why);
  if (frame->type != static_cast<std::uint16_t>(MessageType::kReply)) {
    return lose("it answered with message type " + std::to_string(frame->type));
  }
  Reply reply{nlohmann::json::parse(frame->payload, nullptr, false), std::move(frame->fds)};
  if (reply.body.is_discarded()) return lose("it sent a reply that is not JSON");
  try {
    if (Status s = reply_status(reply.body); !s.ok()) return s;
  } catch (const nlohmann::json::exception& e) {
    return lose(std::string("it sent a malformed reply: ") + e.what());
  }
  return reply;
}

}  // namespace forkfeed
