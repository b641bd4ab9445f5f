// ShardPattern: the --out of forkfeed-shard, "/data/train-%06d.tar", as the names of the
// shards it stands for and as the brace spec that reads them back (--shards).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

class ShardPattern {
 public:
  // A path with exactly one "%d" or "%0Nd" (N from 1 to 20) and no other '%', and no
  // '{' or '}' (the brace spec printed for it would mean something else); relative
  // paths are taken from the working directory. Else InvalidArgument naming `pattern`.
  static Result<ShardPattern> parse(std::string_view pattern);

  // The path of shard `shard`, as printf would write it.
  std::string path(std::uint64_t shard) const;
  // InvalidArgument when `count` shards would need a number wider than the padding
  // ("%03d" and 1001 shards): names then differ in width, and no brace spec reads
  // them all back in order.
  Status check_count(std::uint64_t count) const;
  // "/data/train-{000000..000146}.tar" for shards 0 to count - 1. REQUIRES: count >= 1,
  // check_count(count).ok().
  std::string brace_spec(std::uint64_t count) const;
  // The folder of the shards up to the number ("/data" for "/data/train-%06d.tar").
  std::string folder() const;

 private:
  ShardPattern(std::string prefix, std::string suffix, std::size_t width)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)), width_(width) {}
  std::string number(std::uint64_t n) const;

  std::string prefix_;  // absolute, lexically normal
  std::string suffix_;
  std::size_t width_;  // zero padding; 0 or 1: none
};

}  // namespace forkfeed
