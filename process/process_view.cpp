// The scanners behind ForkSafety: RDMA device files among this process's fds and
// mappings, found by path whichever library opened them, and its thread count.
#include "process/process_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <string_view>
#include <utility>

#include "base/dir_stream.h"
#include "base/unique_fd.h"

namespace forkfeed {
namespace {

// Names in |path|, but "." and "..".
Result<std::vector<std::string>> list_dir(const std::string& path) {
  Result<DirStream> dir = DirStream::open(path);
  if (!dir.ok()) return dir.status();
  return dir->names(path);
}

// All of |path|; /proc files report no size, so read to the end.
Result<std::string> read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("cannot open " + path, errno);
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("cannot read " + path, errno);
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
}

// The ways the kernel may spell |dir| in a path: as given and, since readlink of
// /proc/self/fd and /proc/self/maps show resolved paths, with its symlinks resolved.
std::vector<std::string> spellings(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::vector<std::string> out{dir};
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) != nullptr && dir != resolved) out.emplace_back(resolved);
  return out;
}

// Returns true iff |path| names uverbs* or rdma_cm directly under one of |dirs|.
bool is_rdma_device(std::string_view path, const std::vector<std::string>& dirs) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.remove_suffix(kDeleted.size());
  for (const std::string& dir : dirs) {
    if (path.size() <= dir.size() + 1 || !path.starts_with(dir) || path[dir.size()] != '/') continue;
    const std::string_view name = path.substr(dir.size() + 1);
    if (name.find('/') == std::string_view::npos && (name.starts_with("uverbs") || name == "rdma_cm")) {
      return true;
    }
  }
  return false;
}

// The path of a /proc/<pid>/maps line ("start-end perms offset dev inode   path"), or
// "" for an anonymous mapping. The path runs to the end of the line, spaces included.
std::string_view mapped_path(std::string_view line) {
  std::size_t pos = 0;
  for (int field = 0; field < 5; ++field) {
    pos = line.find_first_not_of(' ', pos);
    if (pos == std::string_view::npos) return {};
    pos = line.find(' ', pos);
    if (pos == std::string_view::npos) return {};
  }
  pos = line.find_first_not_of(' ', pos);
  return pos == std::string_view::npos ? std::string_view() : line.substr(pos);
}

}  // namespace

Result<std::vector<std::string>> rdma_device_fds(const ProcessView& view) {
  const std::vector<std::string> dirs = spellings(view.device_dir);
  const std::string fd_dir = view.proc_self + "/fd";
  Result<std::vector<std::string>> names = list_dir(fd_dir);
  if (!names.ok()) return names.status();
  std::vector<std::pair<int, std::string>> found;
  for (const std::string& name : *names) {
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    char target[PATH_MAX];
    const ssize_t n = ::readlink((fd_dir + "/" + name).c_str(), target, sizeof target);
    if (n <= 0) continue;  // closed since it was listed: the listing's own fd, say
    const std::string_view path(target, static_cast<std::size_t>(n));
    if (is_rdma_device(path, dirs)) found.emplace_back(fd, "fd " + name + " -> " + std::string(path));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [fd, line] : found) out.push_back(std::move(line));
  return out;
}

Result<std::vector<std::string>> rdma_device_mappings(const ProcessView& view) {
  const std::vector<std::string> dirs = spellings(view.device_dir);
  Result<std::string> maps = read_file(view.proc_self + "/maps");
  if (!maps.ok()) return maps.status();
  std::vector<std::string> out;
  std::string_view rest = *maps;
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view path = mapped_path(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (path.empty() || !is_rdma_device(path, dirs)) continue;
    std::string line = "mapping " + std::string(path);
    // A device maps several pages (doorbells, queues): name each file once.
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(std::move(line));
  }
  return out;
}

Result<int> thread_count(const ProcessView& view) {
  Result<std::vector<std::string>> tasks = list_dir(view.proc_self + "/task");
  if (!tasks.ok()) return tasks.status();
  return static_cast<int>(tasks->size());
}

}  // namespace forkfeed
