// forkfeedd: the loader daemon. Trainers that must not fork (RDMA, CUDA) connect with
// forkfeed::Client; the daemon runs one loader per stream and forks nothing but its
// spawned workers. Configured by a YAML file and flags; flags win.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "daemon/config.h"
#include "daemon/server.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"
#include "transport/printable.h"

namespace {

// Prints `message`; returns `code`: kExitBadArguments for flags and config, kExitFailed
// when the daemon could not serve.
int fail(const std::string& message, int code = forkfeed::cli::kExitBadArguments) {
  std::fprintf(stderr, "forkfeedd: %s\n", forkfeed::printable(message).c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "forkfeedd: serves forkfeed loaders to trainer processes over a Unix socket.\n\n"
      "Each client (forkfeed::Client, one trainer rank) opens a stream; the daemon runs a\n"
      "loader for it, whose workers write batches into shared memory that the client reads\n"
      "in place. A client that goes away frees its stream at once. SIGTERM or SIGINT stop\n"
      "the daemon: every stream is closed, every worker reaped, the socket removed.\n",
      "forkfeedd");
  app.get_formatter()->column_width(34);
  app.footer(
      "Exit status: 0 stopped by SIGTERM or SIGINT, 1 could not serve (the socket is taken, say),\n"
      "2 bad arguments or config.");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeedd: " + std::string(e.what()) + " (see --help)\n";
  });
  std::string config_path, socket, log_level, max_arena, max_stream_arena;
  std::optional<std::uint32_t> max_streams, max_workers, max_stream_workers, max_pending, handshake_ms;
  std::vector<std::string> datasets;
  std::vector<uid_t> allow_uids;
  app.add_option("--config", config_path, "YAML config (see config/forkfeedd.yaml); flags override it")
      ->type_name("FILE");
  app.add_option("--socket", socket,
                 "Unix socket path [default: $XDG_RUNTIME_DIR/forkfeed.sock, else "
                 "/tmp/forkfeed-$UID.sock]")
      ->type_name("PATH");
  app.add_option("--dataset", datasets,
                 "A dataset clients may open by name: NAME=DIR (ImageFolder), NAME=FILE "
                 "(manifest) or NAME=shards:SPEC (tar shards, labels from .cls); repeatable")
      ->type_name("NAME=PATH");
  app.add_option("--max-streams", max_streams, "Streams served at once")
      ->check(forkfeed::cli::integer_of(max_streams));
  app.add_option("--max-workers", max_workers, "Workers of all streams together [default: the CPU count]")
      ->check(forkfeed::cli::integer_of(max_workers));
  app.add_option("--max-stream-workers", max_stream_workers,
                 "Workers of one stream [default: no cap but the fair share, max-workers / (streams + 1)]")
      ->check(forkfeed::cli::integer_of(max_stream_workers));
  app.add_option("--max-arena-bytes", max_arena,
                 "Batch slot memory of all streams, e.g. 64G [default: half of RAM]")
      ->type_name("BYTES");
  app.add_option("--max-stream-arena-bytes", max_stream_arena,
                 "Batch slot memory of one stream [default: "
                 "--max-arena-bytes]")
      ->type_name("BYTES");
  app.add_option("--max-pending-connections", max_pending,
                 "Connections without a stream (before open_stream, forkfeed-ctl) at once; the oldest "
                 "one silent for a second makes room for a new one [default: 256]")
      ->check(forkfeed::cli::integer_of(max_pending));
  app.add_option("--handshake-timeout-ms", handshake_ms,
                 "A connection that has not opened a stream this long after connecting is closed, "
                 "replies or not [default: 5000]")
      ->type_name("MS")
      ->check(forkfeed::cli::integer_of(handshake_ms));
  app.add_option("--allow-uid", allow_uids, "Another user that may connect (named datasets only); repeatable")
      ->type_name("UID")
      ->check(forkfeed::cli::integer_of(allow_uids));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off [default: info]");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }

  forkfeed::DaemonConfig config;
  if (!config_path.empty()) {
    if (auto s = forkfeed::load_config_file(config_path, config); !s.ok()) return fail(s.message());
  }
  if (!socket.empty()) config.socket_path = socket;
  for (const std::string& d : datasets) {
    if (auto s = forkfeed::add_dataset_flag(d, config); !s.ok()) return fail(s.message());
  }
  if (max_streams) config.limits.max_streams = *max_streams;
  if (max_workers) config.limits.max_workers = *max_workers;
  if (max_stream_workers) config.limits.max_stream_workers = *max_stream_workers;
  if (max_pending) config.handshake.max_pending_connections = *max_pending;
  if (handshake_ms) config.handshake.timeout = std::chrono::milliseconds(*handshake_ms);
  for (auto [text, field] : {std::pair{&max_arena, &config.limits.max_arena_bytes},
                             std::pair{&max_stream_arena, &config.limits.max_stream_arena_bytes}}) {
    if (text->empty()) continue;
    auto bytes = forkfeed::parse_bytes(*text);
    if (!bytes.ok()) return fail(bytes.status().message());
    *field = *bytes;
  }
  config.allow_uids.insert(config.allow_uids.end(), allow_uids.begin(), allow_uids.end());
  if (!log_level.empty()) config.log_level = log_level;
  const auto level = spdlog::level::from_str(config.log_level);
  if (level == spdlog::level::off && config.log_level != "off") {
    return fail("unknown log level '" + config.log_level + "'; use trace, debug, info, warn, error or off");
  }
  spdlog::set_level(level);
  spdlog::set_pattern("[%H:%M:%S.%e] [forkfeedd] [%^%l%$] %v");
  if (auto s = forkfeed::validate(config); !s.ok()) return fail(s.message());

  // Before any thread exists, so that every thread inherits the mask and the signals
  // reach only the Server's signalfd. A peer that closes its socket is an error reply,
  // never SIGPIPE.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto server = forkfeed::Server::start(std::move(config));
  if (!server.ok()) return fail(server.status().message(), forkfeed::cli::kExitFailed);
  if (auto s = (*server)->run(); !s.ok()) return fail(s.message(), forkfeed::cli::kExitFailed);
  return forkfeed::cli::kExitOk;
}
