// CacheFolder: a folder of forkfeed's caches (the shards' indexes, the files' contents).
// Its files decide where samples lie, what their labels are and what a dataset's identity
// says, so a folder is used only when it is a real directory (not a symbolic link), owned
// by this user and writable by no one else: a folder shared with others could be given
// forged files. Files are written through temporaries renamed into place (readers and
// concurrent writers, ranks on one machine, see a whole file or none); the first write of
// a CacheFolder removes the temporaries that writers which died left behind.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

class CacheFolder {
 public:
  // $FORKFEED_CACHE_DIR/<kind>, else $XDG_CACHE_HOME/forkfeed/<kind>, else
  // $HOME/.cache/forkfeed/<kind> (empty variables count as unset); "" when none is set.
  static std::string default_dir(std::string_view kind);

  // The folder `dir` (made, 0700, on the first write), of the cache `what` names in
  // messages ("the shard index cache").
  CacheFolder(std::string dir, std::string what);
  const std::string& dir() const { return dir_; }
  // Whether the folder may be used: absent (it will be made), or as said above; checked
  // when this was made.
  bool trusted() const { return trusted_; }

  // The file `name` of the folder, up to `max_bytes`; nullopt when it is absent, larger,
  // unreadable or the folder is not trusted. Never an error, never logs.
  std::optional<std::string> read(const std::string& name, std::uint64_t max_bytes) const;
  // Writes `bytes` as the file `name`. Not an error for the caller: the Status says why
  // nothing was written (a folder that is not trusted, a read-only home, a full disk).
  Status write(const std::string& name, std::string_view bytes) const;

 private:
  // Ok when the folder may be used, as trusted() says.
  Status check() const;
  // Removes <dir>/*.tmp.<pid>.<n>.<host> of writers on this host that are gone (pid not
  // running, file older than a minute).
  void remove_stale_temporaries() const;

  std::string dir_;
  std::string what_;
  bool trusted_ = false;
  mutable std::once_flag cleaned_;
};

}  // namespace forkfeed
