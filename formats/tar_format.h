// The tar header layout (POSIX ustar, with GNU's additions) in one place, shared by the
// scanner and the writer so that what one writes the other reads by the same offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace forkfeed::tar {

inline constexpr std::size_t kBlock = 512;

// A field: where it starts in the header block and how many bytes it has.
struct Field {
  std::size_t at;
  std::size_t size;
};
inline constexpr Field kName{0, 100};
inline constexpr Field kMode{100, 8};
inline constexpr Field kUid{108, 8};
inline constexpr Field kGid{116, 8};
inline constexpr Field kSize{124, 12};
inline constexpr Field kMtime{136, 12};
inline constexpr Field kChecksum{148, 8};
inline constexpr Field kTypeflag{156, 1};
inline constexpr Field kMagic{257, 6};    // "ustar\0" (POSIX) or "ustar " (GNU)
inline constexpr Field kVersion{263, 2};  // "00" (POSIX) or " \0" (GNU)
inline constexpr Field kDevMajor{329, 8};
inline constexpr Field kDevMinor{337, 8};
inline constexpr Field kPrefix{345, 155};  // POSIX only: GNU keeps times there

// The sums a header's checksum field may hold: every byte added as unsigned (POSIX) or,
// as some old tars did, as signed char, with the checksum field itself read as spaces.
struct Checksums {
  std::int64_t as_unsigned = 0;
  std::int64_t as_signed = 0;
};
inline Checksums header_checksums(std::span<const unsigned char, kBlock> block) {
  // Two plain runs around the field (which counts as eight spaces), so that the compiler
  // sums them many bytes at a time: every shard's first open checks every header.
  std::int32_t as_unsigned = static_cast<std::int32_t>(kChecksum.size) * ' ';
  std::int32_t as_signed = as_unsigned;
  const auto add = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      as_unsigned += block[i];
      as_signed += static_cast<signed char>(block[i]);
    }
  };
  add(0, kChecksum.at);
  add(kChecksum.at + kChecksum.size, kBlock);
  return {as_unsigned, as_signed};
}

}  // namespace forkfeed::tar
