// forkfeed-ctl: asks a running forkfeedd about itself. `forkfeed-ctl stats` prints the
// daemon's stats as one JSON object: per stream images/s, delivered, skipped, queue
// depth and worker restarts; the daemon's uptime, memory and limits.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "base/printable.h"
#include "client/daemon_connection.h"
#include "forkfeed/client.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/seconds_flag.h"

int main(int argc, char** argv) {
  CLI::App app("forkfeed-ctl: talks to a running forkfeedd.", "forkfeed-ctl");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeed-ctl: " + std::string(e.what()) + " (see --help)\n";
  });
  std::string socket = forkfeed::default_socket_path();
  bool pretty = false;
  std::chrono::milliseconds timeout = forkfeed::kDefaultConnectTimeout;
  app.add_option("--socket", socket, "forkfeedd's socket")->capture_default_str()->type_name("PATH");
  forkfeed::cli::add_seconds_flag(app, "--timeout", timeout,
                                  "Seconds to wait for the daemon to answer, the hello and each request");
  auto* stats = app.add_subcommand("stats", "Print the daemon's stats as JSON");
  stats->add_flag("--pretty", pretty, "Indent the JSON");
  app.require_subcommand(1);
  app.footer("Exit status: 0 done, 1 the daemon could not be reached or answered an error, 2 bad arguments.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }

  auto connection = forkfeed::DaemonConnection::connect(
      socket, timeout, forkfeed::DaemonConnection::RequestTimeout::kSameAsConnect);
  if (!connection.ok()) {
    std::fprintf(stderr, "forkfeed-ctl: %s\n", forkfeed::printable(connection.status().message()).c_str());
    return forkfeed::cli::kExitFailed;
  }
  auto reply = connection->request(forkfeed::MessageType::kStats, nlohmann::json::object());
  if (!reply.ok()) {
    std::fprintf(stderr, "forkfeed-ctl: %s\n", forkfeed::printable(reply.status().message()).c_str());
    return forkfeed::cli::kExitFailed;
  }
  reply->body.erase("ok");
  std::printf("%s\n", reply->body.dump(pretty ? 2 : -1).c_str());
  return 0;
}
