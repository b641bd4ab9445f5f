// What of a sample's bytes a dataset's identity sees (dataset/dataset_identity.h): the one
// rule for a file of its own and for a tar member alike. A member of up to
// kWholeContentBytes is digested whole — every field but images (labels, text, JSON,
// arrays) and small images; a larger one by its first and last kContentWindowBytes, where a
// re-encode or a recompute always shows (a JPEG's tables and first scan lines, a PNG's
// header and its last IDAT's checksums, a .npy's header and first values); with
// ContentCheck::kFull, by every byte. An edit in place in the middle of a large member that
// keeps its size is what the windows do not see.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

inline constexpr std::uint64_t kWholeContentBytes = 16 * 1024;
inline constexpr std::uint64_t kContentWindowBytes = 4 * 1024;

// Which bytes of a member of `size` bytes are digested: the first `head`, and the last
// `tail` (0 when the head is all of it).
struct ContentWindows {
  std::uint64_t head = 0;
  std::uint64_t tail = 0;
};
ContentWindows content_windows(std::uint64_t size, ContentCheck check);

// Bytes of a member from `at` (counted from its start) on: at least one, at most `most`;
// an error when they cannot be read.
using ReadPiece = std::function<Result<std::span<const std::byte>>(std::uint64_t at, std::uint64_t most)>;

// The digest of a member of `size` bytes, its windows read by `read`: XXH3 64 of the head,
// then of the tail seeded with it, so that the same bytes digest alike however they are read.
Result<std::uint64_t> content_digest(std::uint64_t size, ContentCheck check, const ReadPiece& read);

// The content digest of what is made of `digests` (a shard of its members'), in their
// order: XXH3 64 of them as little-endian words, the same on every machine.
std::uint64_t combined_digest(std::span<const std::uint64_t> digests);

}  // namespace forkfeed
