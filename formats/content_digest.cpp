// content_digest(): XXH3 64 (xxHash, inlined from its header) over a member's windows.
#include "formats/content_digest.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace forkfeed {
namespace {

// XXH3 64 of the bytes [from, to) of the member, seeded: one call when `read` gives them
// at once (a member in the scan's window), streamed otherwise. XXH3 streamed and whole agree.
Result<std::uint64_t> digest(std::uint64_t from, std::uint64_t to, std::uint64_t seed,
                             const ReadPiece& read) {
  if (from == to) return XXH3_64bits_withSeed(nullptr, 0, seed);
  auto piece = read(from, to - from);
  if (!piece.ok()) return piece.status();
  if (piece->size() == to - from) return XXH3_64bits_withSeed(piece->data(), piece->size(), seed);
  XXH3_state_t state;
  XXH3_64bits_reset_withSeed(&state, seed);
  for (std::uint64_t at = from;;) {
    if (piece->empty() || piece->size() > to - at) return Status::Internal("a content read gave no bytes");
    XXH3_64bits_update(&state, piece->data(), piece->size());
    at += piece->size();
    if (at == to) return XXH3_64bits_digest(&state);
    piece = read(at, to - at);
    if (!piece.ok()) return piece.status();
  }
}

}  // namespace

ContentWindows content_windows(std::uint64_t size, ContentCheck check) {
  if (check == ContentCheck::kFull || size <= kWholeContentBytes) return {size, 0};
  return {kContentWindowBytes, kContentWindowBytes};
}

Result<std::uint64_t> content_digest(std::uint64_t size, ContentCheck check, const ReadPiece& read) {
  const ContentWindows w = content_windows(size, check);
  auto head = digest(0, w.head, 0, read);
  if (!head.ok()) return head;
  return digest(size - w.tail, size, *head, read);
}

std::uint64_t combined_digest(std::span<const std::uint64_t> digests) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (const std::uint64_t d : digests) {
    unsigned char word[8];
    for (int i = 0; i < 8; ++i) word[i] = static_cast<unsigned char>(d >> (8 * i));
    XXH3_64bits_update(&state, word, sizeof word);
  }
  return XXH3_64bits_digest(&state);
}

}  // namespace forkfeed
