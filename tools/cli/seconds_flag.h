// add_seconds_flag(): the one way a tool takes a duration in seconds (forkfeed-ctl
// --timeout, forkfeed-bench --connect-timeout). CLI11's Range lets "nan" through and each
// tool converted to milliseconds on its own; this checks and converts in one place.
#pragma once

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>

namespace forkfeed::cli {

// Declares `name` taking seconds, from 0.001 to a day (beyond, the milliseconds could
// overflow), finite, and stores them rounded up into `out`, whose value is the default.
CLI::Option* add_seconds_flag(CLI::App& app, const std::string& name, std::chrono::milliseconds& out,
                              const std::string& description);

}  // namespace forkfeed::cli
