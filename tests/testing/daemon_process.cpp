// forkfeedd as a child of the test.
#include "tests/testing/daemon_process.h"

#include <algorithm>

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "base/unique_fd.h"
#include "client/daemon_connection.h"
#include "protocol/frame.h"

extern char** environ;

namespace forkfeed::testing {

UniqueFd connect_unix(const std::string& socket) {
  sockaddr_un addr{};
  if (socket.size() >= sizeof addr.sun_path) return UniqueFd();
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket.c_str(), socket.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return UniqueFd();
  return fd;
}

bool connectable(const std::string& socket) { return connect_unix(socket).valid(); }

DaemonProcess::DaemonProcess(const std::string& socket, const std::vector<std::string>& args, bool wait)
    : socket_(socket) {
  std::vector<std::string> argv_s = {std::string(FORKFEED_BIN_DIR) + "/forkfeedd", "--socket", socket};
  if (std::find(args.begin(), args.end(), "--log-level") == args.end())
    argv_s.insert(argv_s.end(), {"--log-level", "warn"});
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int err = ::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ);
  if (err != 0) {
    ADD_FAILURE() << "posix_spawn of " << argv[0] << ": " << std::strerror(err);
    pid_ = -1;
    return;
  }
  if (wait) {
    EXPECT_TRUE(wait_ready()) << "forkfeedd did not start listening on " << socket;
  }
}

DaemonProcess::~DaemonProcess() {
  if (pid_ <= 0) return;
  // In order first, so that it reaps its workers; then for sure.
  if (!signal_and_wait(SIGTERM, std::chrono::seconds(10))) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

bool DaemonProcess::wait_ready(std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        if (pid_ <= 0) return false;
        return connectable(socket_);
      },
      timeout);
}

std::optional<int> DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  std::optional<int> result;
  eventually(
      [&] {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) result = status;
        return result.has_value();
      },
      timeout);
  if (result) pid_ = -1;
  return result;
}

std::optional<int> DaemonProcess::signal_and_wait(int signal, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  ::kill(pid_, signal);
  return wait_exit(timeout);
}

Batches read_pass(Client& client, std::size_t max_batches) {
  return read_pass_with([&] { return client.next(); }, max_batches);
}

Batches read_batches(Client& client, std::size_t count) {
  return read_batches_with([&] { return client.next(); }, count);
}

int memfd_mappings(pid_t pid, const std::string& name) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:" + name) != std::string::npos) ++n;
  }
  return n;
}

nlohmann::json daemon_stats(const std::string& socket) {
  auto connection = DaemonConnection::connect(socket);
  if (!connection.ok()) return nlohmann::json();
  auto reply = connection->request(MessageType::kStats, nlohmann::json::object());
  return reply.ok() ? reply->body : nlohmann::json();
}

std::string remote_address(const DaemonProcess& daemon) {
  const nlohmann::json stats = daemon_stats(daemon.socket());
  if (!stats.contains("daemon") || stats["daemon"]["listen"].empty()) return "";
  return stats["daemon"]["listen"][0].get<std::string>();
}

pid_t gateway_of(pid_t daemon) {
  for (pid_t child : children_of(daemon)) {
    std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.starts_with("forkfeed-gatewa")) return child;  // comm holds 15 characters
  }
  return -1;
}

}  // namespace forkfeed::testing
