// The per-shard cache of grouped samples, so that opening a sharded dataset a second time
// reads one small file per shard instead of every tar header. A cache answers only for
// the same shard file (path, size, mtime) grouped the same way; anything else about it
// (absent, stale, torn, corrupt) makes load() miss, and the shard is scanned again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "forkfeed/status.h"
#include "loader/shards/shard_samples.h"

namespace forkfeed {

// A shard file's size and modification time, to tell when it changed.
struct ShardStamp {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const ShardStamp&) const = default;
};
Result<ShardStamp> stamp_shard(const std::string& shard_path);  // stat()
Result<ShardStamp> stamp_shard(int fd);                         // fstat() of an open shard

// What a cached scan must match to answer for a shard.
struct CachedShard {
  std::string path;  // absolute, as list_shards returns it
  // Taken once, before the shard is scanned (and before load), and given to store with
  // that scan: a shard that changes while it is scanned is stale on the next open.
  ShardStamp stamp;
  LabelRule rule;
  std::uint64_t max_file_bytes = 0;  // it decides which images are bad data
};

class IndexCache {
 public:
  // $FORKFEED_CACHE_DIR/shard-index, else $XDG_CACHE_HOME/forkfeed/shard-index, else
  // $HOME/.cache/forkfeed/shard-index (empty variables count as unset); "" when none is set.
  static std::string default_dir();

  // Cache files live directly in `dir`, made on the first store.
  explicit IndexCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // <dir>/<16 hex digits>.idx: a stable FNV-1a 64 of the shard's path, label rule and
  // max_file_bytes (not its stamp: a changed shard overwrites its stale file).
  std::string file_for(const CachedShard& shard) const;

  // The scan cached for `shard`, its samples' `shard` field set to `position`; nullopt
  // when there is none that matches or it cannot be read. Never an error, never logs.
  std::optional<ShardScan> load(const CachedShard& shard, std::uint32_t position) const;

  // Caches `scan` of `shard` (as group_samples returned it: for class_folder, before
  // assign_class_labels). Written to a temporary file renamed into place, so readers and
  // concurrent writers (ranks on one machine) see a whole file or none. Not an error for
  // the caller: the Status says why nothing was cached (a read-only home, a full disk),
  // for a warning logged once; a later open scans the shard again.
  Status store(const CachedShard& shard, const ShardScan& scan) const;

 private:
  std::string dir_;
};

}  // namespace forkfeed
