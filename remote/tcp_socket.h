// The TCP control connection between a remote client and forkfeed-gateway: requests,
// replies, credits and heartbeats travel here as forkfeedd's frames (protocol/frame.h),
// batches over UCX. Both ends keep the kernel's keepalive tight, so that a peer whose
// host or network vanished is noticed within about 3 s even while the process on this
// side is busy elsewhere.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <string_view>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

// Connects within `timeout`; the error names `what` and says what to check.
Result<UniqueFd> connect_tcp(const sockaddr_storage& address, std::chrono::milliseconds timeout,
                             std::string_view what);
// A listening socket, non-blocking; `address`'s port 0 becomes the one chosen.
Result<UniqueFd> listen_tcp(sockaddr_storage& address);
// Keepalive (1 s idle, 1 s apart, 2 probes), TCP_USER_TIMEOUT 3 s, no Nagle delay.
void tighten_tcp(int socket);

}  // namespace forkfeed
