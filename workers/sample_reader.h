// SampleReader: a sample's encoded bytes, from a file of its own or a slice of a tar
// shard, into a buffer it reuses. Shards stay open — a few per worker, the least
// recently used closed first — so a sample of a shard costs one pread and no open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "forkfeed/dataset.h"
#include "forkfeed/status.h"
#include "workers/image_decoder.h"

namespace forkfeed {

class SampleReader {
 public:
  // Open shards kept per reader (per worker): bounded fds, however many shards there are.
  static constexpr std::size_t kOpenShards = 8;

  explicit SampleReader(std::uint64_t max_file_bytes) : max_file_bytes_(max_file_bytes) {}

  // The bytes of `source`, valid until the next read. Errors say why, not which sample:
  // the caller names it. The sample's own fault (missing, unreadable, not a regular
  // file, over max_file_bytes) is kBadData, so on_error decides. A shard whose stamp is
  // not the indexed one, checked after every read, or that cannot be opened any more is
  // kFailedPrecondition: the dataset changed. Failures of the machine (out of fds or
  // memory, I/O errors) keep their codes. Neither of the last two is ever skipped.
  // With `before` (a shard's slice only), that many bytes before the slice come first, in
  // the same pread: a member's tar headers, read with its data.
  Result<FileBytes> read(const SampleSource& source, std::uint64_t before = 0);

 private:
  struct OpenShard {
    std::string path;
    UniqueFd fd;
    std::uint64_t last_use = 0;
  };
  Status read_file(const std::string& path);
  Result<const OpenShard*> shard(std::string_view path);
  // Reads `size` bytes at `offset` of `fd` into the buffer; fewer if the file ends first.
  Status read_at(int fd, std::uint64_t offset, std::size_t size);

  std::uint64_t max_file_bytes_;
  std::vector<std::byte> buffer_;  // reused: grows to the largest sample
  std::size_t size_ = 0;           // bytes of the current sample in buffer_
  std::vector<OpenShard> shards_;  // at most kOpenShards
  std::uint64_t uses_ = 0;
};

}  // namespace forkfeed
