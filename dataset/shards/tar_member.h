// A WebDataset shard is a POSIX tar file; a sample is the run of consecutive members
// that share a key (the name up to the first '.' of its last path component, as
// WebDataset splits it), e.g. n01440764_10026.jpg + n01440764_10026.cls. These are the
// types the shard code passes around: no per-sample path is ever kept.
#pragma once

#include <cstdint>
#include <string>

#include "dataset/shards/tar_format.h"

namespace forkfeed {

// One regular-file member of a tar archive: its full name (long names and pax paths
// resolved) and where its bytes lie in the archive.
struct TarMember {
  std::string name;
  std::uint64_t offset = 0;  // of the member's first data byte, from the start of the file
  std::uint64_t size = 0;    // data bytes
  // The bytes before its data that its name is read from (member_name_in): its own header
  // block when that holds the whole name; from the GNU long name or pax header before it
  // when that gave the name.
  std::uint64_t name_headers = tar::kBlock;
  // Its content digest (dataset/content_digest.h), when the scan was asked for it; else 0.
  std::uint64_t content = 0;
  bool operator==(const TarMember&) const = default;
};

// One sample of a shard as the index keeps it: 24 bytes, its image's bytes and its label.
struct ShardSample {
  std::uint64_t offset = 0;  // of the image member's data in the shard
  std::uint32_t shard = 0;   // position of the shard in the dataset's shard list
  std::uint32_t size = 0;    // image bytes (max_file_bytes bounds it far below 4 GiB)
  std::int64_t label = 0;
  bool operator==(const ShardSample&) const = default;
};
static_assert(sizeof(ShardSample) == 24);

}  // namespace forkfeed
