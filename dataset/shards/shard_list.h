// The shards of a WebDataset source, from the one string a user gives for them: a brace
// pattern, a directory of .tar files, or a text file that lists them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// At most this many shards: a typo like {0..99999999} is refused, not expanded.
inline constexpr std::size_t kMaxShards = 1'000'000;
// At most this many bytes of shard names, all together (a list file, too, is read up to
// this size): a pattern with a long folder and a large range is refused before its
// names are made, however few groups it has.
inline constexpr std::uint64_t kMaxShardListBytes = std::uint64_t{64} << 20;

// The shard files `spec` names, made absolute by absolute_path() (the kernel resolves
// ".."), each of which exists and is a regular file, no file twice under any names
// (compared by device and inode). `spec` is:
//  - a directory: every "*.tar" directly in it (not hidden ones, as a shell glob),
//    sorted bytewise by name.
//  - a file whose name ends in ".tar": that one shard.
//  - a text file (read through read_regular_file, at most 64 MiB): one shard path a line,
//    surrounding whitespace trimmed; blank lines and lines starting with '#' ignored;
//    relative paths are taken from the list file's folder.
//  - when no such file exists and it holds '{', a brace pattern:
//    "/data/train-{000000..000146}.tar". A group is
//    an inclusive decimal range {a..b} (a <= b; written with leading zeros, every number
//    is padded to the wider of a and b, as Python's braceexpand does) or a list {x,y,z}.
//    Several groups expand as a product, leftmost slowest, as braceexpand does; nested
//    braces are refused.
// Relative specs and patterns are taken from the working directory. Errors name `spec`
// and the shard by its position: "shard 3 of 147, /data/train-000003.tar: No such file
// or directory".
Result<std::vector<std::string>> list_shards(const std::string& spec);

}  // namespace forkfeed
