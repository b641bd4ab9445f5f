// The exit statuses of every forkfeed tool, one table for all, as each tool's --help
// states them: scripts tell bad arguments from bad data without reading stderr.
#pragma once

#include <CLI/CLI.hpp>

namespace forkfeed::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;         // bad data or state, an I/O or loader error
inline constexpr int kExitBadArguments = 2;   // bad flags or values; nothing was started
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

// Ends a failed app.parse(): prints --help, or the error with the app's failure message,
// and returns kExitOk for --help and kExitBadArguments for anything else (CLI11's own
// codes, 104 to 114, would say which of its checks caught the mistake, not what it was).
int parse_exit(const CLI::App& app, const CLI::ParseError& error);

}  // namespace forkfeed::cli
