// A network address as users write it: HOST:PORT, [IPV6]:PORT, a name or a numeric
// address; resolved once, here, for the listener and the remote client alike.
#pragma once

#include <sys/socket.h>

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// InvalidArgument naming `what` ("--listen") for a malformed address or a port outside
// 0-65535 (0: any free port, for a listener); NotFound when the host does not resolve.
Result<sockaddr_storage> parse_net_address(std::string_view text, std::string_view what);
// "127.0.0.1:13337", "[::1]:13337".
std::string describe(const sockaddr_storage& address);

}  // namespace forkfeed
