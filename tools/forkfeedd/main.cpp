// forkfeedd: the loader daemon. Trainers that must not fork (RDMA, CUDA) connect with
// forkfeed::Client; the daemon runs one loader per stream and forks nothing but its
// spawned workers. Configured by a YAML file and flags; flags win.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/printable.h"
#include "daemon/config.h"
#include "daemon/limit_fields.h"
#include "daemon/server.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"

namespace {

// Prints `message`; returns `code`: kExitBadArguments for flags and config, kExitFailed
// when the daemon could not serve.
int fail(const std::string& message, int code = forkfeed::cli::kExitBadArguments) {
  std::fprintf(stderr, "forkfeedd: %s\n", forkfeed::printable(message).c_str());
  return code;
}

// A limit's flag: its config key with dashes (max_streams: --max-streams).
std::string flag_of(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// What the command line says; CLI11 writes into it, so it stays where it is.
struct Flags {
  std::string config_path, socket, log_level, token_file;
  std::map<std::string_view, std::string> limits;  // key: what its flag said
  std::vector<std::string> datasets, listen;
  std::vector<uid_t> allow_uids;
};

constexpr const char* kAbout =
    "forkfeedd: serves forkfeed loaders to trainer processes over a Unix socket.\n\n"
    "Each client (forkfeed::Client, one trainer rank) opens a stream; the daemon runs a\n"
    "loader for it, whose workers write batches into shared memory that the client reads\n"
    "in place. A client that goes away frees its stream at once. SIGTERM or SIGINT stop\n"
    "the daemon: every stream is closed, every worker reaped, the socket removed.\n";

// The help's layout and how a parse error is told.
void describe(CLI::App& app) {
  app.get_formatter()->column_width(34);
  app.footer(
      "Exit status: 0 stopped by SIGTERM or SIGINT, 1 could not serve (the socket is taken, say),\n"
      "2 bad arguments or config.");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeedd: " + std::string(e.what()) + " (see --help)\n";
  });
}

void add_flags(CLI::App& app, Flags& flags) {
  app.add_option("--config", flags.config_path, "YAML config (see config/forkfeedd.yaml); flags override it")
      ->type_name("FILE");
  app.add_option("--socket", flags.socket,
                 "Unix socket path [default: $XDG_RUNTIME_DIR/forkfeed.sock, else "
                 "/tmp/forkfeed-$UID.sock]")
      ->type_name("PATH");
  app.add_option("--dataset", flags.datasets,
                 "A dataset clients may open by name: NAME=DIR (ImageFolder), NAME=FILE "
                 "(manifest) or NAME=shards:SPEC (tar shards, labels from .cls); repeatable")
      ->type_name("NAME=PATH");
  const forkfeed::DaemonConfig defaults;
  forkfeed::for_each_limit(defaults, [&](const forkfeed::LimitField& field, const auto&) {
    CLI::Option* option =
        app.add_option(flag_of(field.key), flags.limits[field.key], std::string(field.help));
    switch (field.kind) {
      case forkfeed::LimitKind::kBytes: option->type_name("BYTES"); break;
      case forkfeed::LimitKind::kMilliseconds:
        option->type_name("MS")->check(forkfeed::cli::integer_between(0, UINT32_MAX));
        break;
      case forkfeed::LimitKind::kCount:
        option->type_name("UINT")->check(forkfeed::cli::integer_between(0, UINT32_MAX));
        break;
    }
  });
  app.add_option("--allow-uid", flags.allow_uids,
                 "Another user that may connect (named datasets only); repeatable")
      ->type_name("UID")
      ->check(forkfeed::cli::integer_of(flags.allow_uids));
  app.add_option(
         "--listen", flags.listen,
         "Serve trainers on other machines at HOST:PORT over UCX (RDMA where the fabric has it, else "
         "TCP; UCX_TLS, UCX_NET_DEVICES choose), through the forkfeed-gateway process; named datasets "
         "only; repeatable; port 0 picks a free one (forkfeed-ctl stats shows it)")
      ->type_name("HOST:PORT");
  app.add_option("--token-file", flags.token_file,
                 "With --listen: the file holding the token remote clients must present (keep it chmod 600; "
                 "clients get a copy as token_file or $FORKFEED_TOKEN_FILE)")
      ->type_name("FILE");
  app.add_option("--log-level", flags.log_level,
                 "trace, debug, info, warn, error, critical or off [default: info]");
}

// The config file, then the flags over it, then the whole checked.
forkfeed::Result<forkfeed::DaemonConfig> configure(const Flags& flags) {
  forkfeed::DaemonConfig config;
  if (!flags.config_path.empty()) {
    if (auto s = forkfeed::load_config_file(flags.config_path, config); !s.ok()) return s;
  }
  if (!flags.socket.empty()) config.socket_path = flags.socket;
  for (const std::string& d : flags.datasets) {
    if (auto s = forkfeed::add_dataset_flag(d, config); !s.ok()) return s;
  }
  for (const auto& [key, text] : flags.limits) {
    if (text.empty()) continue;
    if (auto s = forkfeed::set_limit(config, key, text); !s.ok()) {
      return forkfeed::Status::InvalidArgument(flag_of(key) + ": " + s.message());
    }
  }
  config.allow_uids.insert(config.allow_uids.end(), flags.allow_uids.begin(), flags.allow_uids.end());
  if (!flags.log_level.empty()) config.log_level = flags.log_level;
  config.listen.insert(config.listen.end(), flags.listen.begin(), flags.listen.end());
  if (!flags.token_file.empty()) config.token_file = flags.token_file;
  const auto level = spdlog::level::from_str(config.log_level);
  if (level == spdlog::level::off && config.log_level != "off") {
    return forkfeed::Status::InvalidArgument("unknown log level '" + config.log_level +
                                             "'; use trace, debug, info, warn, error, critical or off");
  }
  if (auto s = forkfeed::validate(config); !s.ok()) return s;
  return config;
}

// Before any thread exists, so that every thread inherits the mask and the signals reach
// only the Server's signalfd. A peer that closes its socket is an error reply, never
// SIGPIPE.
void block_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(kAbout, "forkfeedd");
  describe(app);
  Flags flags;
  add_flags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }
  auto config = configure(flags);
  if (!config.ok()) return fail(config.status().message());
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [forkfeedd] [%^%l%$] %v");

  block_signals();
  auto server = forkfeed::Server::start(std::move(config).value());
  if (!server.ok()) return fail(server.status().message(), forkfeed::cli::kExitFailed);
  if (auto s = (*server)->run(); !s.ok()) return fail(s.message(), forkfeed::cli::kExitFailed);
  return forkfeed::cli::kExitOk;
}
