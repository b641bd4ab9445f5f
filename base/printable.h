// printable(): user data (paths, manifest lines, names from a request) made safe to
// quote in a message. A file name may hold ESC or BEL, which a terminal obeys, or a
// manifest line a NUL, which cuts a C string; quoted through this they read as text.
#pragma once

#include <string>
#include <string_view>

namespace forkfeed {

// `text` with every control byte written as an escape: \t \n \r \a \b \f \v \e, else
// \xNN (NUL is \x00); C1 controls (U+0080..U+009F) as \u0080..\u009f; bytes that are
// not valid UTF-8 as \xNN. Everything else, valid UTF-8 and backslashes included, is
// kept, so printable(printable(s)) == printable(s).
std::string printable(std::string_view text);

// printable() of at most the first `max_bytes` of `text`; a longer text is cut there and
// ends with "...(N bytes)", N its whole size. For names a file gives (a tar member's may
// be megabytes long in a pax header), so that a message stays a line.
std::string printable_cut(std::string_view text, std::size_t max_bytes = 200);

// The start of `text` in single quotes, for an error that shows what was passed instead
// (a manifest line, a state): printable() of at most `max_bytes`, "..." before the
// closing quote when there was more.
std::string quoted_start(std::string_view text, std::size_t max_bytes);

}  // namespace forkfeed
