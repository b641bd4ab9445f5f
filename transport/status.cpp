// Status::FromErrno: the one place where errno becomes an error value.
#include <cerrno>
#include <cstring>
#include <string>

#include "forkfeed/status.h"

namespace forkfeed {

Status Status::FromErrno(std::string_view context, int err) {
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  return err == ENOENT ? NotFound(std::move(msg)) : IoError(std::move(msg));
}

}  // namespace forkfeed
