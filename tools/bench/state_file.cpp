// State files: read whole, written through a temporary file and an atomic rename.
#include "tools/bench/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "transport/unique_fd.h"

namespace forkfeed::bench {
namespace {

// A state is a few hundred bytes; anything this large is the wrong file.
constexpr std::size_t kMaxStateBytes = 1 << 20;

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("cannot write --save-state file " + path, errno);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> read_state_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("cannot read --resume file " + path, errno);
  std::string state;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("cannot read --resume file " + path, errno);
    if (n == 0) break;
    state.append(buf, static_cast<std::size_t>(n));
    if (state.size() > kMaxStateBytes) {
      return Status::InvalidArgument("--resume file " + path + " is over 1 MiB: not a forkfeed state");
    }
  }
  while (!state.empty() && std::isspace(static_cast<unsigned char>(state.back()))) state.pop_back();
  if (state.empty())
    return Status::InvalidArgument("--resume file " + path + " is empty: not a forkfeed state");
  return state;
}

Status check_state_destination(const std::string& path) {
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (::access(folder.c_str(), W_OK) != 0) {
    return Status::FromErrno("cannot write --save-state file " + path + " in " + folder.string(), errno);
  }
  return Status::Ok();
}

Status write_state_file(const std::string& path, std::string_view state) {
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno("cannot create --save-state file " + tmp, errno);
  Status s = write_all(fd.get(), state, tmp);
  if (s.ok()) s = write_all(fd.get(), "\n", tmp);
  // Without the sync, a power loss after the rename could leave an empty file.
  if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno("cannot sync --save-state file " + tmp, errno);
  if (s.ok() && ::close(fd.release()) != 0)
    s = Status::FromErrno("cannot write --save-state file " + tmp, errno);
  if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno("cannot rename " + tmp + " to " + path, errno);
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace forkfeed::bench
