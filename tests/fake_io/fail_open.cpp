// A test double of the file system's failures, loaded with LD_PRELOAD: open() of a path
// that holds $FORKFEED_FAIL_OPEN fails with EIO, as a failing disk or a network file
// system would make it; every other open() is the C library's. Forked and spawned
// workers inherit it, so a test sees what the loader does with an error that is not the
// file's fault.
#include <dlfcn.h>
#include <fcntl.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace {

using OpenFn = int (*)(const char*, int, ...);

bool fails(const char* path) {
  const char* pattern = std::getenv("FORKFEED_FAIL_OPEN");
  return pattern != nullptr && *pattern != '\0' && path != nullptr && std::strstr(path, pattern) != nullptr;
}

int forward(const char* symbol, const char* path, int flags, mode_t mode) {
  if (fails(path)) {
    errno = EIO;
    return -1;
  }
  const auto next = reinterpret_cast<OpenFn>(::dlsym(RTLD_NEXT, symbol));
  return next(path, flags, mode);
}

mode_t mode_of(int flags, va_list args) {
  return (flags & (O_CREAT | O_TMPFILE)) != 0 ? static_cast<mode_t>(va_arg(args, int)) : 0;
}

}  // namespace

extern "C" int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_of(flags, args);
  va_end(args);
  return forward("open", path, flags, mode);
}

extern "C" int open64(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_of(flags, args);
  va_end(args);
  return forward("open64", path, flags, mode);
}
