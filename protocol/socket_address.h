// The address of forkfeedd's Unix socket, made in one place for the daemon that binds it
// and the clients that connect to it: the path must fit sun_path and hold no NUL byte
// (which would cut it, and so name another socket).
#pragma once

#include <sys/un.h>

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// InvalidArgument naming `what` ("forkfeedd socket path") and the remedy when `path` is
// empty, too long or holds a NUL byte.
Result<sockaddr_un> unix_socket_address(const std::string& path, std::string_view what);

}  // namespace forkfeed
