// Reading and replacing user-named files: refuse what is not a regular file before it
// can block, grow memory without end, or be replaced.
#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "base/printable.h"

namespace forkfeed {
namespace {

// "is a FIFO", "is a directory" ...; and what to do instead.
std::string not_regular(const std::string& named, mode_t mode) {
  std::string kind, remedy = "name a regular file";
  if (S_ISFIFO(mode)) {
    kind = "a FIFO";
    remedy = "write what it carries to a file and name that file";
  } else if (S_ISDIR(mode)) {
    kind = "a directory";
    remedy = "name a file inside it";
  } else if (S_ISCHR(mode)) {
    kind = "a character device";
  } else if (S_ISBLK(mode)) {
    kind = "a block device";
  } else if (S_ISSOCK(mode)) {
    kind = "a socket";
  } else if (S_ISLNK(mode)) {
    kind = "a symbolic link";
    remedy = "name the file it points to (a rename would replace the link, not that file)";
  } else {
    kind = "a special file";
  }
  return named + " is " + kind + ", not a regular file; " + remedy;
}

// `size` 0: not known, the file grew past the limit while it was read.
Status too_large(const std::string& named, std::uint64_t size, const SizeLimit& limit) {
  std::string msg = named;
  msg += (size > 0 ? " is " + std::to_string(size) + " bytes >" : " grew past") + " " +
         std::string(limit.name) + " " + std::to_string(limit.bytes);
  if (!limit.remedy.empty()) msg += ": " + std::string(limit.remedy);
  return Status::InvalidArgument(std::move(msg));
}

// Ok iff nothing is at `path`, or a regular file (lstat: a symbolic link is not one).
Status check_target(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT
               ? Status::Ok()
               : Status::FromErrno("cannot stat " + std::string(what) + " " + printable(path), errno);
  }
  if (!S_ISREG(st.st_mode))
    return Status::InvalidArgument(not_regular(std::string(what) + " " + printable(path), st.st_mode));
  return Status::Ok();
}

}  // namespace

Status check_no_nul(std::string_view what, std::string_view path) {
  const std::size_t nul = path.find('\0');
  if (nul == std::string_view::npos) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " " + printable_cut(path) +
                                 " holds a NUL byte at position " + std::to_string(nul) +
                                 "; a path cannot hold one (the system would read it as ending there, and so "
                                 "name another file)");
}

Result<RegularFile> open_regular_file(const std::string& path, std::string_view what,
                                      const SizeLimit& limit) {
  const std::string named = what.empty() ? "the file" : std::string(what) + " " + printable(path);
  if (Status s = check_no_nul(what.empty() ? "the file" : what, path); !s.ok()) return s;
  RegularFile file;
  file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!file.fd.valid()) return Status::FromErrno("cannot open " + named, errno);
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0) return Status::FromErrno("cannot stat " + named, errno);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(not_regular(named, st.st_mode));
  file.size = static_cast<std::uint64_t>(std::max<off_t>(st.st_size, 0));
  file.mode = st.st_mode & 07777;
  file.owner = st.st_uid;
  if (file.size > limit.bytes) return too_large(named, file.size, limit);
  return file;
}

Result<std::string> read_regular_file(const std::string& path, std::string_view what,
                                      const SizeLimit& limit) {
  Result<RegularFile> file = open_regular_file(path, what, limit);
  if (!file.ok()) return file.status();
  return read_opened_file(*file, path, what, limit);
}

Result<std::string> read_opened_file(RegularFile& file, const std::string& path, std::string_view what,
                                     const SizeLimit& limit) {
  // st_size is only a hint (a file may grow, /proc says 0); one spare byte lets the read
  // that sees EOF happen without growing, and reading stops one byte past the limit.
  const std::size_t cap = static_cast<std::size_t>(std::min<std::uint64_t>(limit.bytes, SIZE_MAX - 1)) + 1;
  std::string text(static_cast<std::size_t>(std::min<std::uint64_t>(file.size + 1, cap)), '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (text.size() == cap) return too_large(std::string(what) + " " + printable(path), 0, limit);
      text.resize(std::min(cap, text.size() * 2));
    }
    const ssize_t n = ::read(file.fd.get(), text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("cannot read " + std::string(what) + " " + printable(path), errno);
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  text.resize(used);
  return text;
}

Status check_replaceable(const std::string& path, std::string_view what) {
  if (Status s = check_no_nul(what, path); !s.ok()) return s;
  if (Status s = check_target(path, what); !s.ok()) return s;
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (::access(folder.c_str(), W_OK) != 0) {
    return Status::FromErrno(
        "cannot write " + std::string(what) + " " + printable(path) + " in " + printable(folder.string()),
        errno);
  }
  return Status::Ok();
}

}  // namespace forkfeed
