// Frame I/O over a Unix stream socket, with fds as SCM_RIGHTS ancillary data.
#include "protocol/frame.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace forkfeed {
namespace {

// Reads exactly `length` bytes into `out`, collecting (or closing) fds that arrive.
Status read_exactly(int socket, char* out, std::size_t length, bool accept_fds, std::vector<UniqueFd>& fds,
                    bool at_frame_start) {
  std::size_t got = 0;
  while (got < length) {
    iovec iov{out + got, length - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFrameFds)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status::DeadlineExceeded(at_frame_start && got == 0
                                            ? "timed out waiting for a message"
                                            : "truncated message: the rest did not arrive in time");
      }
      return Status::FromErrno("reading from the forkfeedd socket", errno);
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        UniqueFd owned(fd);
        if (accept_fds && fds.size() < kMaxFrameFds) fds.push_back(std::move(owned));
      }
    }
    if (n == 0) {
      return Status::IoError(at_frame_start && got == 0 ? "connection closed"
                                                        : "connection closed in the middle of a message");
    }
    got += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

// InvalidArgument when the header breaks the protocol.
Status check_header(const FrameHeader& header) {
  if (header.magic != kFrameMagic)
    return Status::InvalidArgument("not a forkfeed protocol message (bad magic)");
  if (header.version != kProtocolVersion) {
    return Status::InvalidArgument("protocol version " + std::to_string(header.version) +
                                   ", but this side speaks " + std::to_string(kProtocolVersion) +
                                   "; use forkfeed and forkfeedd of one release");
  }
  if (header.length > kMaxPayload) {
    return Status::InvalidArgument("message of " + std::to_string(header.length) +
                                   " bytes is over the limit of " + std::to_string(kMaxPayload));
  }
  return Status::Ok();
}

}  // namespace

Status FrameReader::fill(int socket) {
  char chunk[16384];
  while (buffer_.size() < sizeof(FrameHeader) + kMaxPayload) {
    const ssize_t n = ::recv(socket, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return Status::FromErrno("reading from the connection", errno);
    }
    if (n == 0) {
      return Status::IoError(buffer_.empty() ? "connection closed"
                                             : "connection closed in the middle of a message");
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

Result<std::optional<Frame>> FrameReader::next() {
  if (buffer_.size() < sizeof(FrameHeader)) return std::optional<Frame>();
  FrameHeader header{};
  std::memcpy(&header, buffer_.data(), sizeof header);
  if (Status s = check_header(header); !s.ok()) return s;
  if (buffer_.size() < sizeof header + header.length) return std::optional<Frame>();
  Frame frame;
  frame.type = header.type;
  frame.payload = buffer_.substr(sizeof header, header.length);
  buffer_.erase(0, sizeof header + header.length);
  return std::optional<Frame>(std::move(frame));
}

Status send_frame(int socket, MessageType type, std::string_view payload, std::span<const int> fds) {
  if (payload.size() > kMaxPayload) {
    return Status::InvalidArgument("message of " + std::to_string(payload.size()) +
                                   " bytes is over the limit of " + std::to_string(kMaxPayload));
  }
  if (fds.size() > kMaxFrameFds) return Status::Internal("too many fds for one frame");
  const FrameHeader header{kFrameMagic, kProtocolVersion, static_cast<std::uint16_t>(type),
                           static_cast<std::uint32_t>(payload.size()), 0};
  iovec iov[2] = {{const_cast<FrameHeader*>(&header), sizeof header},
                  {const_cast<char*>(payload.data()), payload.size()}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFrameFds)] = {};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  std::size_t total = sizeof header + payload.size(), sent = 0;
  while (sent < total) {
    const ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return Status::DeadlineExceeded("timed out sending a message");
      return Status::FromErrno("writing to the forkfeedd socket", errno);
    }
    sent += static_cast<std::size_t>(n);
    // The fds went with the first bytes; send the rest plainly.
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    std::size_t skip = static_cast<std::size_t>(n);
    while (msg.msg_iovlen > 0 && skip >= msg.msg_iov[0].iov_len) {
      skip -= msg.msg_iov[0].iov_len;
      ++msg.msg_iov;
      --msg.msg_iovlen;
    }
    if (msg.msg_iovlen > 0) {
      msg.msg_iov[0].iov_base = static_cast<char*>(msg.msg_iov[0].iov_base) + skip;
      msg.msg_iov[0].iov_len -= skip;
    }
  }
  return Status::Ok();
}

Result<Frame> recv_frame(int socket, bool accept_fds) {
  Frame frame;
  FrameHeader header{};
  if (Status s =
          read_exactly(socket, reinterpret_cast<char*>(&header), sizeof header, accept_fds, frame.fds, true);
      !s.ok()) {
    return s;
  }
  if (Status s = check_header(header); !s.ok()) return s;
  frame.type = header.type;
  frame.payload.resize(header.length);
  if (Status s = read_exactly(socket, frame.payload.data(), header.length, accept_fds, frame.fds, false);
      !s.ok()) {
    return s;
  }
  return frame;
}

}  // namespace forkfeed
