// AtomicFile: a new file written under a temporary name beside its path and renamed
// over that path only by commit(), so a reader finds the old file or the whole new one,
// never a part of it. The one owner of write-then-rename: replace_regular_file, the
// shard index cache and forkfeed-shard's TarWriter all write through it.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

class AtomicFile {
 public:
  struct Options {
    // The temporary is `path` + this. A fixed one is ours: what a crash left there goes.
    std::string temp_suffix = ".tmp";
    mode_t mode = 0644;
    // fsync before the rename; without it a power loss after the rename could leave an
    // empty file. A cache that checksums what it reads may skip it.
    bool sync = true;
    // Refuse a `path` that exists and is not a regular file (a symbolic link, a FIFO),
    // at create() and again just before the rename: renaming would replace the link,
    // not the file it points to. Off only for a folder the caller owns (the index cache).
    bool check_target = true;
  };

  // Creates the temporary (O_EXCL | O_NOFOLLOW: a new regular file, not a link or a FIFO
  // put in its place). `what` names the file in messages ("state file").
  static Result<AtomicFile> create(std::string path, std::string_view what, Options options);
  static Result<AtomicFile> create(std::string path, std::string_view what) {
    return create(std::move(path), what, Options{});
  }

  AtomicFile(AtomicFile&& other) noexcept = default;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // not committed: the temporary is removed

  // The temporary's fd, for writers of their own (writev); invalid after commit().
  int fd() const { return fd_.get(); }
  const std::string& temp_path() const { return temp_; }

  // Writes all of `bytes`, retrying short writes and EINTR.
  Status write(std::string_view bytes);

  // Syncs (unless told not to), closes and renames the temporary over the path. On any
  // failure the temporary is removed and the path left as it was.
  Status commit();

 private:
  AtomicFile(std::string path, std::string temp, std::string what, Options options, UniqueFd fd);
  void abandon();

  std::string path_;
  std::string temp_;
  std::string what_;
  Options options_;
  UniqueFd fd_;
};

// Replaces `path` with `bytes` through an AtomicFile: a crash leaves the old file or the
// new one, never half of one. A `path` that exists and is not a regular file is refused
// (InvalidArgument), a symbolic link included; the caller should name the file it means.
Status replace_regular_file(const std::string& path, std::string_view bytes, std::string_view what);

}  // namespace forkfeed
