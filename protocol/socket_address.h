// The address of forkfeedd's Unix socket, made in one place for the daemon that binds it
// and the clients that connect to it: the path must fit sun_path and hold no NUL byte
// (which would cut it, and so name another socket).
#pragma once

#include <sys/un.h>

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// InvalidArgument naming `what` ("forkfeedd socket path") and `remedy` (what the caller
// can change: "choose a shorter --socket") when `path` is empty, too long or holds a NUL.
Result<sockaddr_un> unix_socket_address(const std::string& path, std::string_view what,
                                        std::string_view remedy);

}  // namespace forkfeed
