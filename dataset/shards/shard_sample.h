// A WebDataset shard is a POSIX tar file; a sample is the run of consecutive members
// that share a key (formats/member_key.h), e.g. n01440764_10026.jpg + n01440764_10026.cls.
// This is what the index keeps of one: no per-sample path is ever kept.
#pragma once

#include <cstdint>

namespace forkfeed {

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
