// TarWriter: writes a WebDataset shard that GNU tar, Python's tarfile and scan_tar() all
// read, and that is byte-for-byte the same for the same members, so shards made twice
// compare equal. A shard appears at its path complete or not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "forkfeed/status.h"
#include "transport/unique_fd.h"

namespace forkfeed {

class TarWriter {
 public:
  // Starts writing `path`.tmp (whatever a crash left there is replaced). `path` must be
  // absent or a regular file, in a writable folder; else InvalidArgument or IoError.
  static Result<TarWriter> create(const std::string& path);

  TarWriter(TarWriter&& other) noexcept;
  TarWriter& operator=(TarWriter&& other) noexcept;
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  // An unfinished writer removes its .tmp: nothing half-written is left behind.
  ~TarWriter();

  // Appends a regular file: a POSIX ustar header (mode 0644, owner 0:0 with no names,
  // mtime 0), the data, zeros to a whole block. A name over 100 bytes is split into the
  // ustar prefix and name where a '/' allows, else it goes in a pax 'x' header's `path`,
  // as does a size of 8 GiB or more. InvalidArgument for an empty name, one with a NUL,
  // one ending in '/' (readers take it for a directory), or after finish(); IoError
  // when a write fails, after which the writer refuses everything but destruction.
  Status add(std::string_view name, std::span<const std::byte> data);

  // Ends the archive with two zero blocks, pads it to a whole 10240-byte record as GNU
  // tar does, syncs it and renames `path`.tmp over `path`. Called once.
  Status finish();

  // Bytes written so far: the offset at which the next add()'s header starts.
  std::uint64_t bytes_written() const { return written_; }

 private:
  TarWriter(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  Status write_all(std::span<const std::string_view> pieces);
  void abandon();

  std::string path_;  // the final name; empty once moved from
  UniqueFd fd_;       // of path_.tmp; invalid once finished or abandoned
  std::uint64_t written_ = 0;
  Status failed_;  // the write error that stopped this writer
};

}  // namespace forkfeed
