// forkfeed-gateway: forkfeedd's network process. forkfeedd starts it (--listen) before
// anything could load UCX into forkfeedd, and it serves remote trainers over UCX as a
// local client of that forkfeedd. It starts no process of its own, ever: UCX, loaded
// here, makes forking unsafe (see gateway/gateway.h).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/printable.h"
#include "base/unique_fd.h"
#include "gateway/gateway.h"
#include "remote/token.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"

namespace {

// Where forkfeedd reads "listening HOST:PORT" lines, or one "error REASON" line: then the
// reason is in its log and its stats, not only on the stderr they share.
int ready_fd = -1;

int fail(const std::string& message, int code) {
  const std::string text = forkfeed::printable(message);
  std::fprintf(stderr, "forkfeed-gateway: %s\n", text.c_str());
  if (ready_fd >= 0) {
    const std::string line = "error " + text + "\n";
    (void)!::write(ready_fd, line.data(), line.size());
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "forkfeed-gateway: serves a forkfeedd's streams to trainers on other machines over UCX. forkfeedd "
      "starts it when given --listen; it is not meant to be run by hand."};
  app.footer("Exit status: 0 stopped (SIGTERM, or forkfeedd went), 1 could not serve, 2 bad arguments.");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeed-gateway: " + std::string(e.what()) + " (see --help)\n";
  });
  forkfeed::GatewaySettings settings;
  std::vector<std::string> listen;
  std::string token_file, log_level = "info";
  pid_t parent = 0;
  app.add_option("--daemon-socket", settings.daemon_socket, "The forkfeedd socket whose streams it serves")
      ->required();
  app.add_option("--listen", listen, "HOST:PORT to accept remote clients on; repeatable")->required();
  app.add_option("--token-file", token_file, "The token remote clients must present")->required();
  app.add_option("--parent-pid", parent, "forkfeedd's pid: the gateway ends when it goes")
      ->required()
      ->check(forkfeed::cli::integer_of(parent));
  app.add_option("--ready-fd", ready_fd,
                 "Where to write 'listening HOST:PORT' lines once listening, or 'error REASON' if it cannot")
      ->check(forkfeed::cli::integer_of(ready_fd));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [forkfeed-gateway] [%l] %v");
  // forkfeedd spawns it from its main thread: the parent death signal holds.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) return fail("forkfeedd (pid " + std::to_string(parent) + ") is gone", 1);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  forkfeed::UniqueFd stop(::signalfd(-1, &mask, SFD_CLOEXEC));
  if (!stop.valid()) return fail("signalfd failed", 1);
  auto token = forkfeed::read_token_file(token_file, "--token-file");
  if (!token.ok()) return fail(token.status().message(), forkfeed::cli::kExitBadArguments);
  settings.token = std::move(token).value();
  auto gateway = forkfeed::Gateway::start(std::move(settings), listen);
  if (!gateway.ok()) return fail(gateway.status().message(), 1);
  if (ready_fd >= 0) {
    std::string lines;
    for (const std::string& address : (*gateway)->listening()) lines += "listening " + address + "\n";
    (void)!::write(ready_fd, lines.data(), lines.size());
    ::close(ready_fd);
    ready_fd = -1;
  }
  if (forkfeed::Status s = (*gateway)->run(stop.get()); !s.ok()) return fail(s.message(), 1);
  // Asked to stop (forkfeedd stops, or died: the parent death signal): end here, without
  // tearing UCX down. With sends in flight its teardown asserts (UCX 1.13) and takes the
  // process down slowly, holding the listening port, while a forkfeedd restarted in its
  // place wants it; the kernel closes every connection and frees every mapping at once.
  spdlog::shutdown();
  std::_Exit(0);
}
