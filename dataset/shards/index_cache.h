// The per-shard cache of grouped samples, so that opening a sharded dataset a second time
// reads one small file per shard instead of every tar header. A cache answers only for
// the same shard file (path and stamp: device, inode, size, mtime and ctime, which cp -p
// cannot forge) grouped the same way; anything else about it (absent, stale, torn,
// corrupt) makes load() miss, and the shard is scanned again.
//
// The cache is trusted: a file in it decides where samples lie and what their labels
// are, so it is used only in a folder that is (dataset/cache_folder.h); any other is left
// alone, and every shard is scanned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dataset/cache_folder.h"
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
  // How the shard's content digest was read (ShardScan::content): a scan of another check
  // is another entry.
  ContentCheck check = ContentCheck::kWindows;
};

class IndexCache {
 public:
  // CacheFolder::default_dir("shard-index"): $FORKFEED_CACHE_DIR/shard-index, else
  // $XDG_CACHE_HOME/forkfeed/shard-index, else $HOME/.cache/forkfeed/shard-index; "" when
  // none is set.
  static std::string default_dir();

  // Cache files live directly in `dir` (a CacheFolder: used only when trusted).
  explicit IndexCache(std::string dir);
  const std::string& dir() const { return folder_.dir(); }

  // <dir>/<16 hex digits>.idx: a stable FNV-1a 64 of the shard's path, label rule,
  // max_file_bytes, with fields their text and `missing`, and a content check other than
  // windows (not its stamp: a changed shard overwrites its stale file).
  std::string file_for(const CachedShard& shard) const;

  // The scan cached for `shard`, its samples' `shard` field set to `position`; nullopt
  // when there is none that matches, it cannot be read, or the folder is not trusted.
  // Never an error, never logs.
  std::optional<ShardScan> load(const CachedShard& shard, std::uint32_t position) const;

  // Caches `scan` of `shard` (as group_samples returned it: for class_folder, before
  // assign_class_labels), through CacheFolder::write. Not an error for the caller: the
  // Status says why nothing was cached, for a warning logged once; a later open scans
  // the shard again.
  Status store(const CachedShard& shard, const ShardScan& scan) const;

 private:
  // file_for without the folder: the name CacheFolder reads and writes.
  std::string name_for(const CachedShard& shard) const;

  CacheFolder folder_;
};

}  // namespace forkfeed
