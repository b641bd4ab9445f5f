// run_command(): runs one of forkfeed's tools to completion with its output captured,
// for the tests that drive a tool from outside. A run that hangs is killed, with every
// process it started, and reported as a test failure.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace forkfeed::testing {

struct CommandOutcome {
  bool exited = false;  // false: killed by a signal (or by the timeout)
  int code = -1;        // exit status when exited
  int signal = 0;
  std::string out;
  std::string err;
  // "exit C, signal S" and both outputs, for a failure message.
  std::string describe() const;
};

// A command started by start_command(), not yet waited for.
struct StartedCommand {
  pid_t pid = -1;    // -1: it could not start (a test failure has been added)
  std::string name;  // argv[0]
  std::string dir;
};

// Starts `argv` (argv[0] a path) in its own process group with stdin from /dev/null and
// stdout/stderr in files under `dir`.
StartedCommand start_command(const std::vector<std::string>& argv, const std::string& dir);
// Waits for `command`; after `timeout` its whole group is killed (a test failure).
CommandOutcome wait_command(const StartedCommand& command,
                            std::chrono::seconds timeout = std::chrono::seconds(120));
// start_command() then wait_command().
CommandOutcome run_command(const std::vector<std::string>& argv, const std::string& dir,
                           std::chrono::seconds timeout = std::chrono::seconds(120));

// What a tool wrote: the whole of the file at `path` ("" if it cannot be read), and a
// text split into its lines.
std::string read_file(const std::string& path);
std::vector<std::string> lines_of(const std::string& text);

}  // namespace forkfeed::testing
