// FileStamp from stat(), and what changed between two.
#include "base/file_stamp.h"

#include <sys/sysmacros.h>

#include <cerrno>

namespace forkfeed {
namespace {

std::int64_t nanoseconds(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

FileStamp stamp_of(const struct stat& st) {
  return FileStamp{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                   static_cast<std::uint64_t>(st.st_size), nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

Result<FileStamp> stamp_file(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno("fstat", errno);
  return stamp_of(st);
}

std::string stamp_change(const FileStamp& indexed, const FileStamp& now) {
  if (now.device != indexed.device || now.inode != indexed.inode) {
    const auto dev = static_cast<dev_t>(now.device);
    return "it is another file now (device " + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)) +
           ", inode " + std::to_string(now.inode) + "; it was inode " + std::to_string(indexed.inode) + ")";
  }
  if (now.size != indexed.size) {
    return "its size is " + std::to_string(now.size) + " bytes (it was " + std::to_string(indexed.size) + ")";
  }
  if (now.mtime_ns != indexed.mtime_ns) return "it was modified";
  return "its status changed (a copy over it, a touch or a chmod, say)";
}

}  // namespace forkfeed
