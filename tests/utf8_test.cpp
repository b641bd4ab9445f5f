// UTF-8 validation against a plain decoder that follows the definition (RFC 3629): every
// string of one to three bytes and every four-byte lead agree with it, and the offset of
// the first bad sequence is exact wherever it falls, inside or across the ASCII words.
#include "base/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace forkfeed {
namespace {

using namespace std::string_literals;

// The definition, spelled out: a lead byte gives the length, continuation bytes carry
// six bits each, and the code point must need that length, be no surrogate and be at
// most U+10FFFF. Returns the length of the valid sequence at `at`, 0 if none.
std::size_t reference_length(const std::string& s, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(at);
  std::size_t length;
  std::uint32_t code;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code = lead & 0x07;
  } else {
    return 0;
  }
  if (at + length > s.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    code = code << 6 | (byte(at + i) & 0x3F);
  }
  static constexpr std::uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return length;
}

std::size_t reference_prefix(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = reference_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::string encode(std::uint32_t code) {
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | code >> 6);
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | code >> 12);
    out += static_cast<char>(0x80 | (code >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | code >> 18);
    out += static_cast<char>(0x80 | (code >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (code >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

TEST(Utf8, EveryCodePointEncodedIsValidButSurrogates) {
  for (std::uint32_t code = 0; code <= 0x10FFFF; ++code) {
    const std::string s = encode(code);
    const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
    ASSERT_EQ(valid_utf8(s), !surrogate) << std::hex << "U+" << code;
    ASSERT_EQ(utf8_sequence_length(s), surrogate ? 0 : s.size()) << std::hex << "U+" << code;
  }
}

TEST(Utf8, EveryStringOfUpToThreeBytesAgreesWithTheDefinition) {
  std::string s;
  for (int a = 0; a < 256; ++a) {
    s.assign(1, static_cast<char>(a));
    ASSERT_EQ(valid_utf8_prefix(s), reference_prefix(s)) << a;
    for (int b = 0; b < 256; ++b) {
      s.assign({static_cast<char>(a), static_cast<char>(b)});
      ASSERT_EQ(valid_utf8_prefix(s), reference_prefix(s)) << a << " " << b;
      // Of three bytes: only leads that can start a multi-byte sequence make a case
      // that two bytes did not already decide.
      if (a < 0xE0 || a > 0xF4) continue;
      for (int c = 0; c < 256; ++c) {
        s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
        ASSERT_EQ(valid_utf8_prefix(s), reference_prefix(s)) << a << " " << b << " " << c;
      }
    }
  }
}

TEST(Utf8, FourByteSequencesAgreeWithTheDefinition) {
  for (int a = 0xE0; a < 0x100; ++a) {
    for (int b = 0x70; b < 0xD0; ++b) {
      for (const int c : {0x00, 0x7F, 0x80, 0xBF, 0xC0}) {
        for (const int d : {0x41, 0x80, 0x9F, 0xBF, 0xC3}) {
          const std::string s{static_cast<char>(a), static_cast<char>(b), static_cast<char>(c),
                              static_cast<char>(d)};
          ASSERT_EQ(valid_utf8_prefix(s), reference_prefix(s)) << a << " " << b << " " << c << " " << d;
        }
      }
    }
  }
}

TEST(Utf8, RefusesWhatTheStandardForbids) {
  EXPECT_FALSE(valid_utf8("\xC0\x80"));                  // overlong NUL
  EXPECT_FALSE(valid_utf8("\xC1\xBF"));                  // overlong U+007F
  EXPECT_FALSE(valid_utf8("\xE0\x9F\xBF"));              // overlong U+07FF
  EXPECT_FALSE(valid_utf8("\xF0\x8F\xBF\xBF"));          // overlong U+FFFF
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));              // U+D800, a surrogate
  EXPECT_FALSE(valid_utf8("\xED\xBF\xBF"));              // U+DFFF
  EXPECT_FALSE(valid_utf8("\xED\xA0\xBD\xED\xB8\x80"));  // CESU-8's pair for U+1F600
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));          // U+110000
  EXPECT_FALSE(valid_utf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(valid_utf8("\xFE"));
  EXPECT_FALSE(valid_utf8("\xFF"));
  EXPECT_FALSE(valid_utf8("\x80"));      // a lone continuation
  EXPECT_FALSE(valid_utf8("\xE6\x97"));  // cut short
  EXPECT_FALSE(valid_utf8("\xF0\x9F\x98"));
  EXPECT_FALSE(valid_utf8("\xC3 "));  // a lead, then no continuation
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("a\0b"s));                                                 // NUL is a character
  EXPECT_TRUE(valid_utf8("\xEF\xBF\xBF\xF4\x8F\xBF\xBF\xED\x9F\xBF\xEE\x80\x80"));  // U+FFFF U+10FFFF ...
}

TEST(Utf8, TheOffsetIsThatOfTheFirstBadSequenceWhereverItFalls) {
  const std::string e_acute = "\xC3\xA9";
  for (std::size_t at = 0; at < 70; ++at) {
    SCOPED_TRACE(at);
    std::string text(80, 'x');
    text[at] = '\xFF';
    EXPECT_EQ(valid_utf8_prefix(text), at);
    // A valid sequence across the 8- and 16-byte words, then a bad one after it.
    text.assign(80, 'y');
    text.replace(at, 2, e_acute);
    EXPECT_EQ(valid_utf8_prefix(text), text.size());
    text[at + 5] = '\x80';
    EXPECT_EQ(valid_utf8_prefix(text), at + 5);
    // A sequence cut short by the end of the text: the offset of its lead.
    text.assign(at, 'z');
    text += "\xF0\x9F\x98";
    EXPECT_EQ(valid_utf8_prefix(text), at);
  }
  EXPECT_EQ(valid_utf8_prefix("a caption with a typo\xE9 in Latin-1"), 21u);
}

}  // namespace
}  // namespace forkfeed
