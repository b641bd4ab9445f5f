// Exit statuses shared by the tools, and the end of a failed CLI11 parse.
#include "tools/cli/exit_status.h"

namespace forkfeed::cli {

int parse_exit(const CLI::App& app, const CLI::ParseError& error) {
  return app.exit(error) == static_cast<int>(CLI::ExitCodes::Success) ? kExitOk : kExitBadArguments;
}

}  // namespace forkfeed::cli
