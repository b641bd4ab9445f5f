// PoolMessage over a SOCK_SEQPACKET socket, fds as SCM_RIGHTS.
#include "transport/pool_message.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace forkfeed {

Result<std::pair<UniqueFd, UniqueFd>> pool_socket_pair() {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return Status::FromErrno("socketpair for a pool worker", errno);
  }
  return std::pair{UniqueFd(ends[0]), UniqueFd(ends[1])};
}

Status send_pool_message(int socket, PoolMessage message, int arena, int completions) {
  iovec iov{&message, sizeof message};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  const int fds[2] = {arena, completions};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  if (message.kind == PoolMessage::Kind::kAttach) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  }
  while (true) {
    const ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof message)) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Status::ResourceExhausted(
          "a pool worker's socket is full: the worker does not read its messages");
    }
    return Status::FromErrno("sending a message to a pool worker", n < 0 ? errno : EMSGSIZE);
  }
}

Result<std::optional<ReceivedPoolMessage>> receive_pool_message(int socket) {
  PoolMessage message{};
  iovec iov{&message, sizeof message};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::optional<ReceivedPoolMessage>();
  if (n < 0) return Status::FromErrno("reading the pool's socket", errno);
  if (n == 0) return Status::IoError("the pool closed its socket");
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    for (std::size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  const bool attach = message.kind == PoolMessage::Kind::kAttach;
  if (n != static_cast<ssize_t>(sizeof message) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
      (!attach && message.kind != PoolMessage::Kind::kDetach) || fds.size() != (attach ? 2u : 0u)) {
    return Status::InvalidArgument("a malformed message on the pool's socket");
  }
  ReceivedPoolMessage received{message, {}, {}};
  if (attach) {
    received.arena = std::move(fds[0]);
    received.completions = std::move(fds[1]);
  }
  return std::optional<ReceivedPoolMessage>(std::move(received));
}

}  // namespace forkfeed
