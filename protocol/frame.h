// Frames on forkfeedd's Unix socket, and on forkfeed-gateway's TCP one: a fixed header
// (magic, protocol version, message type, payload length) followed by a JSON payload of
// at most kMaxPayload bytes. A reply may carry fds (SCM_RIGHTS, on the Unix socket); a
// request never does.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

inline constexpr std::uint32_t kFrameMagic = 0x6466666b;  // "kffd"
inline constexpr std::uint16_t kProtocolVersion = 2;      // 2: "pass" became "generation"
inline constexpr std::uint32_t kMaxPayload = 64 * 1024;
inline constexpr std::size_t kMaxFrameFds = 4;

enum class MessageType : std::uint16_t {
  kOpenStream = 1,   // client: open a stream; the reply carries its fds
  kSeek = 2,         // client: start a pass at {"epoch", "position"}
  kStats = 3,        // client or forkfeed-ctl: the stream's or the daemon's stats
  kClose = 4,        // client: close the stream and the connection
  kHello = 5,        // client, first: proves the daemon answers; the reply is {"protocol": N}
                     // (to forkfeed-gateway: with {"token", "worker"}, see gateway/remote_session.h)
  kCredit = 6,       // remote client, unanswered: {"count": N} receive slots freed
  kWant = 7,         // client of a stream on demand, unanswered: {"generation", "batches": [...]}
  kReply = 100,      // daemon: {"ok":true,...} or {"ok":false,"code":...,"error":...}
  kNotice = 101,     // daemon, unasked: {"error":...}, why it closes the connection now
  kHeartbeat = 102,  // forkfeed-gateway, unasked, every second: it is alive
};

struct FrameHeader {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t type;
  std::uint32_t length;  // payload bytes that follow
  std::uint32_t reserved;
};
static_assert(sizeof(FrameHeader) == 16);

struct Frame {
  std::uint16_t type = 0;  // a MessageType, or anything a peer sent
  std::string payload;
  std::vector<UniqueFd> fds;
};

// Sends one frame (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE).
Status send_frame(int socket, MessageType type, std::string_view payload, std::span<const int> fds = {});

// Frames from a non-blocking socket, assembled as their bytes arrive, so that a peer
// that sends half a frame never holds a reader serving others (forkfeed-gateway).
class FrameReader {
 public:
  // Reads what `socket` has now; IoError when the peer closed (a message starting with
  // "connection closed") or the read failed.
  Status fill(int socket);
  // The next complete frame, if one is in; InvalidArgument for one that breaks the
  // protocol (bad magic or version, over kMaxPayload): the rest cannot be trusted.
  Result<std::optional<Frame>> next();

 private:
  std::string buffer_;
};

// Reads one frame. Fds that come with it are kept if `accept_fds`, else closed.
// Errors: InvalidArgument for a frame that breaks the protocol (bad magic or version,
// over kMaxPayload): the stream of bytes cannot be trusted after it, so close.
// IoError for a closed, timed-out or broken connection; its message starts with
// "connection closed" when the peer closed it cleanly.
Result<Frame> recv_frame(int socket, bool accept_fds);

}  // namespace forkfeed
