// UTF-8 as Unicode defines it (RFC 3629): the one owner of what counts as valid, for text
// fields a worker copies into a batch, JSON strings and the escapes of printable().
// Valid means shortest forms only, no surrogates (U+D800..U+DFFF) and nothing above
// U+10FFFF; NUL and other controls are valid characters.
#pragma once

#include <cstddef>
#include <string_view>

namespace forkfeed {

// The length (1 to 4) of the valid UTF-8 sequence that `text` starts with; 0 when it
// starts with none (a stray continuation byte, an overlong form, a surrogate, a code
// point above U+10FFFF, a sequence cut short by the end of `text`) or is empty.
std::size_t utf8_sequence_length(std::string_view text);

// The length of the longest prefix of `text` that is valid UTF-8 and ends between two
// sequences: text.size() when the whole text is valid, else the byte offset of the first
// invalid sequence ("is not UTF-8 at byte 17"). ASCII runs are skipped a word at a time.
std::size_t valid_utf8_prefix(std::string_view text);

// Whether all of `text` is valid UTF-8.
inline bool valid_utf8(std::string_view text) { return valid_utf8_prefix(text) == text.size(); }

}  // namespace forkfeed
