// AtomicFile (base/atomic_file.h) and replace_regular_file, which writes through it.
#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "base/printable.h"
#include "base/regular_file.h"

namespace forkfeed {

Result<AtomicFile> AtomicFile::create(std::string path, std::string_view what, Options options) {
  if (Status s = check_no_nul(what, path); !s.ok()) return s;
  if (options.check_target) {
    if (Status s = check_replaceable(path, what); !s.ok()) return s;
  }
  std::string temp = path + options.temp_suffix;
  ::unlink(temp.c_str());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options.mode));
  if (!fd.valid())
    return Status::FromErrno("cannot write " + std::string(what) + " " + printable(temp), errno);
  return AtomicFile(std::move(path), std::move(temp), std::string(what), std::move(options), std::move(fd));
}

AtomicFile::AtomicFile(std::string path, std::string temp, std::string what, Options options, UniqueFd fd)
    : path_(std::move(path)),
      temp_(std::move(temp)),
      what_(std::move(what)),
      options_(std::move(options)),
      fd_(std::move(fd)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    abandon();
    path_ = std::move(other.path_);
    temp_ = std::move(other.temp_);
    what_ = std::move(other.what_);
    options_ = std::move(other.options_);
    fd_ = std::move(other.fd_);
  }
  return *this;
}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::abandon() {
  if (!fd_.valid()) return;
  fd_.reset();
  ::unlink(temp_.c_str());
}

Status AtomicFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status::FromErrno("cannot write " + what_ + " " + printable(temp_), n < 0 ? errno : ENOSPC);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

Status AtomicFile::commit() {
  if (!fd_.valid())
    return Status::FailedPrecondition(what_ + " " + printable(path_) + " is committed already");
  Status s = Status::Ok();
  if (options_.sync && ::fsync(fd_.get()) != 0)
    s = Status::FromErrno("cannot sync " + printable(temp_), errno);
  if (s.ok() && ::close(fd_.release()) != 0) s = Status::FromErrno("cannot write " + printable(temp_), errno);
  // Again just before the rename: what was written may have taken long.
  if (s.ok() && options_.check_target) s = check_replaceable(path_, what_);
  if (s.ok() && std::rename(temp_.c_str(), path_.c_str()) != 0) {
    s = Status::FromErrno("cannot rename " + printable(temp_) + " to " + printable(path_), errno);
  }
  if (!s.ok()) {
    fd_.reset();
    ::unlink(temp_.c_str());
  }
  return s;
}

Status replace_regular_file(const std::string& path, std::string_view bytes, std::string_view what) {
  auto file = AtomicFile::create(path, what);
  if (!file.ok()) return file.status();
  if (Status s = file->write(bytes); !s.ok()) return s;
  return file->commit();
}

}  // namespace forkfeed
