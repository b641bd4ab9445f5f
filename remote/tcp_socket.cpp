// TCP sockets for the control connection.
#include "remote/tcp_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <cerrno>
#include <string>

#include "remote/net_address.h"

namespace forkfeed {

void tighten_tcp(int socket) {
  const int one = 1, idle = 1, interval = 1, probes = 2, user_timeout_ms = 3000;
  ::setsockopt(socket, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  ::setsockopt(socket, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  ::setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static socklen_t length_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

Result<UniqueFd> connect_tcp(const sockaddr_storage& address, std::chrono::milliseconds timeout,
                             std::string_view what) {
  const std::string where = describe(address);
  UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno("socket for " + std::string(what), errno);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length_of(address)) != 0) {
    if (errno != EINPROGRESS) {
      return Status::FromErrno("cannot connect to " + std::string(what) + " at " + where +
                                   " (is it running, with --listen on that address?)",
                               errno);
    }
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) {
      return Status::IoError(std::string(what) + " at " + where + " did not take the connection within " +
                             std::to_string(timeout.count()) + " ms (a firewall, or the wrong address?)");
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return Status::FromErrno("cannot connect to " + std::string(what) + " at " + where +
                                   " (is it running, with --listen on that address?)",
                               err);
    }
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  tighten_tcp(fd.get());
  return fd;
}

Result<UniqueFd> listen_tcp(sockaddr_storage& address) {
  UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno("socket for --listen", errno);
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), length_of(address)) != 0) {
    return Status::FromErrno(
        "cannot listen on " + describe(address) + " (is the address this host's, and the port free?)", errno);
  }
  if (::listen(fd.get(), 256) != 0) return Status::FromErrno("listen on " + describe(address), errno);
  socklen_t len = sizeof address;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &len);
  return fd;
}

}  // namespace forkfeed
