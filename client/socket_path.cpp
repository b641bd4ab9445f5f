// default_socket_path(): where forkfeedd listens unless told otherwise.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "forkfeed/client.h"

namespace forkfeed {

std::string default_socket_path() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && *runtime != '\0') return std::string(runtime) + "/forkfeed.sock";
  return "/tmp/forkfeed-" + std::to_string(::getuid()) + ".sock";
}

}  // namespace forkfeed
