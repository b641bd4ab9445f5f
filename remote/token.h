// The shared secret a remote client presents to forkfeed-gateway: read from a file (never
// a flag: it would show in ps), compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// The token in `path`: its content without the final newline. InvalidArgument naming the
// file when it cannot be read, is empty, or is over 4 KiB; `what` says whose file it is.
Result<std::string> read_token_file(const std::string& path, std::string_view what);
// Whether the two are equal, in a time that does not depend on where they differ.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace forkfeed
