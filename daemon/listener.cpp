// Listener: bind with stale-socket detection, accept with SO_PEERCRED.
#include "daemon/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocol/socket_address.h"

namespace forkfeed {
namespace {

Result<sockaddr_un> address_of(const std::string& path) {
  return unix_socket_address(path, "forkfeedd socket path", "choose a shorter --socket");
}

// A socket file exists at `path`: is a daemon answering on it?
bool answers(const sockaddr_un& addr) {
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return probe.valid() && ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

Result<Listener> Listener::bind(const std::string& path, bool others_allowed) {
  auto addr = address_of(path);
  if (!addr.ok()) return addr.status();
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::InvalidArgument(path +
                                     " exists and is not a socket; remove it or choose another --socket");
    }
    if (answers(*addr)) {
      return Status::InvalidArgument("another forkfeedd is serving " + path +
                                     "; stop it first or choose another --socket");
    }
    // Left by a daemon that crashed: nobody listens. Replace it.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno("removing the stale socket " + path, errno);
    }
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno("socket", errno);
  const mode_t old = ::umask(others_allowed ? 0 : 0077);
  const int rc = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  const int err = errno;
  ::umask(old);
  if (rc != 0) {
    if (err == EADDRINUSE) {
      return Status::InvalidArgument("another forkfeedd took " + path +
                                     " just now; stop it first or choose another --socket");
    }
    return Status::FromErrno("binding forkfeedd's socket " + path, err);
  }
  if (::listen(fd.get(), 64) != 0) return Status::FromErrno("listen on " + path, errno);
  if (::stat(path.c_str(), &st) != 0) return Status::FromErrno("stat of " + path, errno);
  return Listener(std::move(fd), path, st.st_ino);
}

Result<Listener::Peer> Listener::accept() {
  Peer peer;
  peer.socket = UniqueFd(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!peer.socket.valid()) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) return Peer{};
    return Status::FromErrno("accept on " + path_, errno);
  }
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(peer.socket.get(), SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    return Status::FromErrno("SO_PEERCRED", errno);
  }
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  return peer;
}

void Listener::close() {
  if (!fd_.valid()) return;
  fd_.reset();
  // Only our own file: a daemon started after us may have replaced it.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path_.c_str());
}

}  // namespace forkfeed
