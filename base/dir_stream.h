// DirStream: an open directory, read entry by entry the way os.scandir reports them (the
// ImageFolder walk, shard folders, the index cache), or as a list of names (/proc).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/printable.h"
#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

// A directory's identity, so that a walk can notice it has come back to one (a symlink loop).
struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator==(const DirId&) const = default;
};

// An open directory stream, closed exactly once.
class DirStream {
 public:
  static Result<DirStream> open(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return Status::FromErrno("cannot open directory " + printable(path), errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
      return Status::FromErrno("cannot stat directory " + printable(path), errno);
    DIR* dir = ::fdopendir(fd.get());
    if (dir == nullptr) return Status::FromErrno("cannot read directory " + printable(path), errno);
    fd.release();  // the DIR owns it now
    return DirStream(dir, DirId{st.st_dev, st.st_ino});
  }

  DirId id() const { return id_; }
  // The directory's fd, for *at() calls on its entries; owned by the stream.
  int fd() const { return ::dirfd(dir_.get()); }

  // Calls on_entry(name, is_dir) for every entry but "." and "..". is_dir follows
  // symlinks like os.DirEntry.is_dir(): a broken link counts as a file, as in os.walk.
  template <typename OnEntry>
  Status for_each(const std::string& path, OnEntry&& on_entry) {
    const int dfd = ::dirfd(dir_.get());
    for (;;) {
      Result<const dirent*> e = next(path);
      if (!e.ok()) return e.status();
      if (*e == nullptr) return Status::Ok();
      bool is_dir = (*e)->d_type == DT_DIR;
      if ((*e)->d_type == DT_LNK || (*e)->d_type == DT_UNKNOWN) {  // only these need a stat
        struct stat st {};
        is_dir = ::fstatat(dfd, (*e)->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
      }
      on_entry(std::string_view((*e)->d_name), is_dir);
    }
  }

  // The names of every entry but "." and "..", with no stat at all (/proc/self/fd's
  // entries are links to whatever the process holds open).
  Result<std::vector<std::string>> names(const std::string& path) {
    std::vector<std::string> out;
    for (;;) {
      Result<const dirent*> e = next(path);
      if (!e.ok()) return e.status();
      if (*e == nullptr) return out;
      out.emplace_back((*e)->d_name);
    }
  }

 private:
  struct Closer {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  DirStream(DIR* dir, DirId id) : dir_(dir), id_(id) {}

  // The next entry but "." and "..", or nullptr at the end.
  Result<const dirent*> next(const std::string& path) {
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(dir_.get());
      if (e == nullptr) {
        if (errno != 0) return Status::FromErrno("cannot read directory " + printable(path), errno);
        return static_cast<const dirent*>(nullptr);
      }
      const std::string_view name(e->d_name);
      if (name != "." && name != "..") return e;
    }
  }

  std::unique_ptr<DIR, Closer> dir_;
  DirId id_;
};

}  // namespace forkfeed
