// UTF-8 validation: a byte-wise check of each multi-byte sequence (Unicode's table 3-7 of
// well-formed byte sequences), and ASCII, which most text is, eight bytes at a time.
#include "base/utf8.h"

#include <cstdint>
#include <cstring>

namespace forkfeed {
namespace {

constexpr std::uint64_t kHighBits = 0x8080808080808080ull;

bool continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

std::size_t utf8_sequence_length(std::string_view text) {
  if (text.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto cont = [&](std::size_t i) { return i < text.size() && continuation(b(i)); };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  // 0x80..0xC1: a continuation byte, or the lead of an overlong two-byte form of ASCII.
  if (lead >= 0xC2 && lead <= 0xDF) return cont(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (lead == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (lead == 0xED && b(1) >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (lead == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (lead == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // 0xF5..0xFF start nothing
}

std::size_t valid_utf8_prefix(std::string_view text) {
  const char* const data = text.data();
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i < size) {
    // Two words at a time while they are ASCII: a caption or a JSON record mostly is.
    while (i + 16 <= size) {
      std::uint64_t a, b;
      std::memcpy(&a, data + i, 8);
      std::memcpy(&b, data + i + 8, 8);
      if (((a | b) & kHighBits) != 0) break;
      i += 16;
    }
    if (i == size) break;
    if (static_cast<unsigned char>(data[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(text.substr(i));
    if (n == 0) return i;
    i += n;
  }
  return size;
}

}  // namespace forkfeed
