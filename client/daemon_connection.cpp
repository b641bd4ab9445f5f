// DaemonConnection: the client's socket to forkfeedd.
#include "client/daemon_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "protocol/stream_request.h"

namespace forkfeed {

Result<DaemonConnection> DaemonConnection::connect(const std::string& socket_path) {
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument("forkfeedd socket path '" + socket_path + "' is empty or longer than " +
                                   std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno("socket for forkfeedd", errno);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    return Status::FromErrno("cannot connect to forkfeedd at " + socket_path +
                                 " (is it running? start it with: forkfeedd --socket " + socket_path + ")",
                             err);
  }
  return DaemonConnection(std::move(fd), socket_path);
}

Status DaemonConnection::lose(const std::string& why) {
  if (lost_.ok()) {
    lost_ = Status::IoError("lost the connection to forkfeedd at " + path_ + ": " + why +
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
  if (frame->type == static_cast<std::uint16_t>(MessageType::kNotice)) {
    const auto body = nlohmann::json::parse(frame->payload, nullptr, false);
    std::string why = "it sent a notice";
    if (body.is_object() && body.contains("error") && body["error"].is_string())
      why = body["error"].get<std::string>();
    return lose(why);
  }
  return lose("it sent a message nobody asked for (type " + std::to_string(frame->type) + ")");
}

Status DaemonConnection::check() {
  if (!lost_.ok()) return lost_;
  pollfd p{socket_.get(), POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) return read_unasked();
  return Status::Ok();
}

Result<DaemonConnection::Reply> DaemonConnection::request(MessageType type, const nlohmann::json& body) {
  if (Status s = check(); !s.ok()) return s;
  if (Status s = send_frame(socket_.get(), type, body.dump()); !s.ok()) return lose(s.message());
  auto frame = recv_frame(socket_.get(), true);
  if (!frame.ok()) {
    const bool closed = frame.status().message().starts_with("connection closed");
    return lose(closed ? "the daemon closed it (stopped or crashed)" : frame.status().message());
  }
  if (frame->type == static_cast<std::uint16_t>(MessageType::kNotice)) {
    const auto notice = nlohmann::json::parse(frame->payload, nullptr, false);
    return lose(notice.is_object() && notice.contains("error") && notice["error"].is_string()
                    ? notice["error"].get<std::string>()
                    : std::string("it sent a notice"));
  }
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
