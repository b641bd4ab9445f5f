// TarWriter: writes a WebDataset shard that GNU tar, Python's tarfile and scan_tar() all
// read, and that is byte-for-byte the same for the same members, so shards made twice
// compare equal. A shard appears at its path complete or not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/atomic_file.h"
#include "forkfeed/status.h"

namespace forkfeed {

class TarWriter {
 public:
  // Starts writing an AtomicFile for `path` (whatever a crash left in its temporary is
  // replaced). `path` must be absent or a regular file, in a writable folder; else
  // InvalidArgument or IoError. An unfinished writer leaves nothing behind.
  static Result<TarWriter> create(const std::string& path);

  // Appends a regular file: a POSIX ustar header (mode 0644, owner 0:0 with no names,
  // mtime 0), the data, zeros to a whole block. A name over 100 bytes is split into the
  // ustar prefix and name where a '/' allows, else it goes in a pax 'x' header's `path`,
  // as does a size of 8 GiB or more. InvalidArgument for an empty name, one with a NUL,
  // one ending in '/' (readers take it for a directory), or after finish(); IoError
  // when a write fails, after which the writer refuses everything but destruction.
  Status add(std::string_view name, std::span<const std::byte> data);

  // Ends the archive with two zero blocks, pads it to a whole 10240-byte record as GNU
  // tar does, and commits the file to `path`. Called once.
  Status finish();

 private:
  TarWriter(std::string path, AtomicFile file) : path_(std::move(path)), file_(std::move(file)) {}
  Status write_all(std::span<const std::string_view> pieces);

  std::string path_;                // the final name
  std::optional<AtomicFile> file_;  // empty once finished or failed
  std::uint64_t written_ = 0;       // the offset at which the next add()'s header starts
  Status failed_;                   // the write error that stopped this writer
};

}  // namespace forkfeed
