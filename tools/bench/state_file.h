// The --resume and --save-state files of forkfeed-bench: each holds one Loader::state().
#pragma once

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed::bench {

// The state stored in `path`, without trailing whitespace. An empty or oversized file is
// an error: Loader::open() takes an empty state to mean "start from the beginning".
Result<std::string> read_state_file(const std::string& path);

// Ok iff `path` does not exist or is a regular file (not a FIFO, device or symbolic
// link), and its folder is writable, so a long run does not end with a state it cannot save.
Status check_state_destination(const std::string& path);

// Replaces `path` with `state` and a newline: writes `path`.tmp, syncs it and renames it
// over `path`, so a crash leaves the old file or the new one, never half of one. Refuses
// a `path` that is not a regular file.
Status write_state_file(const std::string& path, std::string_view state);

}  // namespace forkfeed::bench
