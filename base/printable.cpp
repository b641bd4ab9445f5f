// printable(): escapes control bytes and invalid UTF-8 in quoted user data.
#include "base/printable.h"

#include <cstdint>

#include "base/utf8.h"

namespace forkfeed {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, unsigned char byte) {
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

// The escape of a C0 control byte or DEL: C's letter for it where there is one.
void append_control(std::string& out, unsigned char byte) {
  static constexpr std::string_view kBytes = "\t\n\r\a\b\f\v\x1b";
  static constexpr std::string_view kLetters = "tnrabfve";
  if (const std::size_t at = kBytes.find(static_cast<char>(byte)); at != std::string_view::npos) {
    out += '\\';
    out += kLetters[at];
  } else {
    append_hex(out, byte);
  }
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7F) {
      append_control(out, byte);
      ++i;
    } else if (byte < 0x80) {
      out += static_cast<char>(byte);
      ++i;
    } else if (const std::size_t n = utf8_sequence_length(text.substr(i)); n == 0) {
      append_hex(out, byte);
      ++i;
    } else if (n == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      // U+0080..U+009F: C1 controls; U+009B alone starts a terminal escape sequence.
      out += "\\u00";
      out += kHex[static_cast<unsigned char>(text[i + 1]) >> 4];
      out += kHex[static_cast<unsigned char>(text[i + 1]) & 0xF];
      i += 2;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable_cut(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return printable(text);
  return printable(text.substr(0, max_bytes)) + "...(" + std::to_string(text.size()) + " bytes)";
}

std::string quoted_start(std::string_view text, std::size_t max_bytes) {
  std::string quoted = "'";  // appended, not "'" + ...: GCC 12 warns of a false -Wrestrict there
  quoted += printable(text.substr(0, max_bytes));
  quoted += text.size() > max_bytes ? "...'" : "'";
  return quoted;
}

}  // namespace forkfeed
