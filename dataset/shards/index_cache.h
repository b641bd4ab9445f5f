// The per-shard cache of grouped samples, so that opening a sharded dataset a second time
// reads one small file per shard instead of every tar header. A cache answers only for
// the same shard file (path and stamp: device, inode, size, mtime and ctime, which cp -p
// cannot forge) grouped the same way; anything else about it (absent, stale, torn,
// corrupt) makes load() miss, and the shard is scanned again.
//
// The cache is trusted: a file in it decides where samples lie and what their labels
// are. So it is used only in a folder that is a real directory (not a symbolic link),
// owned by this user and writable by no one else; a folder shared with others could be
// given forged files. Such a folder is left alone, and every shard is scanned.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "dataset/shards/shard_samples.h"
#include "forkfeed/dataset.h"
#include "forkfeed/status.h"

namespace forkfeed {

// What a cached scan must match to answer for a shard.
struct CachedShard {
  std::string path;  // absolute, as list_shards returns it
  // Taken once, from the open shard before it is scanned (and before load), and given to
  // store with that scan: a shard that changes while it is scanned is stale on the next open.
  FileStamp stamp;
  LabelRule rule;
  std::uint64_t max_file_bytes = 0;  // it decides which images are bad data
  // The fields the shard was grouped by (their text and `missing`, which decides whether
  // a sample lacking one is bad data); empty: none. A scan made for other fields, or
  // without, is another entry.
  SampleSchema fields = {};
};

class IndexCache {
 public:
  // $FORKFEED_CACHE_DIR/shard-index, else $XDG_CACHE_HOME/forkfeed/shard-index, else
  // $HOME/.cache/forkfeed/shard-index (empty variables count as unset); "" when none is set.
  static std::string default_dir();

  // Cache files live directly in `dir`, made (mode 0700) on the first store.
  explicit IndexCache(std::string dir);
  const std::string& dir() const { return dir_; }

  // <dir>/<16 hex digits>.idx: a stable FNV-1a 64 of the shard's path, label rule,
  // max_file_bytes and, with fields, their text and `missing` (not its stamp: a changed
  // shard overwrites its stale file).
  std::string file_for(const CachedShard& shard) const;

  // The scan cached for `shard`, its samples' `shard` field set to `position`; nullopt
  // when there is none that matches, it cannot be read, or the folder is not trusted.
  // Never an error, never logs.
  std::optional<ShardScan> load(const CachedShard& shard, std::uint32_t position) const;

  // Caches `scan` of `shard` (as group_samples returned it: for class_folder, before
  // assign_class_labels). Written to a temporary file renamed into place, so readers and
  // concurrent writers (ranks on one machine) see a whole file or none. The first store
  // of this IndexCache also removes the temporary files that writers which died left
  // behind. Not an error for the caller: the Status says why nothing was cached (a
  // folder that is not trusted, a read-only home, a full disk), for a warning logged
  // once; a later open scans the shard again.
  Status store(const CachedShard& shard, const ShardScan& scan) const;

 private:
  // Ok when the folder may be used: absent (it will be made), or a directory that is
  // not a symbolic link, is owned by this user and is writable by no one else.
  Status check_folder() const;
  // Removes <dir>/*.idx.tmp.* of writers on this host that are gone (pid not running,
  // file older than a minute).
  void remove_stale_temporaries() const;

  std::string dir_;
  bool trusted_ = false;  // check_folder() was Ok when this was made
  mutable std::once_flag cleaned_;
};

}  // namespace forkfeed
