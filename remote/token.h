// The shared secret a remote client presents to forkfeed-gateway: read from a file (never
// a flag: it would show in ps), compared in constant time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// The fewest bytes that are not whitespace a token must hold: shorter ones are guessed.
inline constexpr std::size_t kMinTokenBytes = 16;

// The token in `path`: its content without the whitespace at its start and end (ASCII
// space, tab, newline, carriage return, vertical tab, form feed), which an editor or a
// copy adds or drops unseen. InvalidArgument naming the file when it cannot be read, is
// empty or holds only whitespace, holds fewer than kMinTokenBytes bytes that are not
// whitespace, is over 4 KiB, is not owned by this process's (effective) user — root's
// own included — or when users other than its owner may read or write it (its mode and
// `chmod 600` said); `what` says whose file it is. Both ends read their token through this.
Result<std::string> read_token_file(const std::string& path, std::string_view what);
// Whether the two are equal, in a time that does not depend on where they differ.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace forkfeed
