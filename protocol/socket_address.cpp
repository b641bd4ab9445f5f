// unix_socket_address(): a checked sockaddr_un.
#include "protocol/socket_address.h"

#include <sys/socket.h>

#include <cstring>

#include "base/printable.h"
#include "base/regular_file.h"

namespace forkfeed {

Result<sockaddr_un> unix_socket_address(const std::string& path, std::string_view what,
                                        std::string_view remedy) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument(std::string(what) + " '" + printable(path) + "' is empty or longer than " +
                                   std::to_string(sizeof addr.sun_path - 1) + " bytes; " +
                                   std::string(remedy));
  }
  if (Status s = check_no_nul(what, path); !s.ok()) return s;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

}  // namespace forkfeed
