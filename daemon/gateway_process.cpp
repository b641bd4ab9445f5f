// GatewayProcess: finding, spawning and waiting for forkfeed-gateway.
#include "daemon/gateway_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "base/unique_fd.h"

namespace forkfeed {
namespace {

constexpr int kReadyFd = 3;
constexpr auto kStartTimeout = std::chrono::seconds(20);

Result<std::string> find_gateway() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("FORKFEED_GATEWAY"); env != nullptr && *env != '\0') {
    if (::access(env, X_OK) == 0) return std::string(env);
    return Status::NotFound(std::string("FORKFEED_GATEWAY=") + env + " is not an executable file");
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path candidate = exe.parent_path() / "forkfeed-gateway";
  if (!ec && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  return Status::NotFound("cannot find forkfeed-gateway (looked at " + candidate.string() +
                          "), which --listen needs; install it next to forkfeedd or set FORKFEED_GATEWAY");
}

}  // namespace

Result<GatewayProcess> GatewayProcess::start(const DaemonConfig& config, const std::string& socket) {
  auto path = find_gateway();
  if (!path.ok()) return path.status();
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return Status::FromErrno("pipe for forkfeed-gateway", errno);
  UniqueFd ready(ends[0]), ready_write(ends[1]);
  std::vector<std::string> args = {
      *path,           "--daemon-socket",          socket,       "--token-file",           config.token_file,
      "--parent-pid",  std::to_string(::getpid()), "--ready-fd", std::to_string(kReadyFd), "--log-level",
      config.log_level};
  for (const std::string& address : config.listen) {
    args.push_back("--listen");
    args.push_back(address);
  }
  const std::pair<int, int> fds[] = {{ready_write.get(), kReadyFd}};
  auto child = ChildProcess::spawn(args, fds, kReadyFd + 1, "forkfeed-gateway");
  ready_write.reset();
  if (!child.ok()) return child.status();
  // Its lines, until it closes the pipe: then it listens (or it failed, and says why on
  // the stderr it shares with forkfeedd).
  std::string said;
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{ready.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      return Status::DeadlineExceeded("forkfeed-gateway did not start listening within 20 s");
    }
    char buffer[512];
    const ssize_t n = ::read(ready.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    said.append(buffer, static_cast<std::size_t>(n));
  }
  std::vector<std::string> listening;
  std::string reason;
  std::istringstream lines(said);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("listening ")) listening.push_back(line.substr(10));
    if (line.starts_with("error ")) reason = line.substr(6);
  }
  if (listening.size() != config.listen.size()) {
    auto exit = child->wait_for(std::chrono::seconds(5));
    const std::string how = exit ? " (" + exit->describe() + ")" : std::string();
    if (!reason.empty()) return Status::IoError("forkfeed-gateway could not start" + how + ": " + reason);
    return Status::IoError("forkfeed-gateway could not start" + how + "; its reason is in the log above");
  }
  return GatewayProcess(std::move(child).value(), std::move(listening));
}

void GatewayProcess::stop() {
  if (child_.reaped() || child_.pid() <= 0) return;
  ::kill(child_.pid(), SIGTERM);
  if (!child_.wait_for(std::chrono::seconds(2))) child_.kill_and_reap();
}

}  // namespace forkfeed
