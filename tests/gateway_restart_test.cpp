// forkfeedd keeps its gateway serving: a gateway that dies while it cannot start again —
// its token file gone during a rotation, its port taken for a moment — is tried again
// with a back-off until it starts, and remote clients are served at the same address
// once the cause goes away; the daemon's stats show the tries. Over loopback TCP.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "base/unique_fd.h"
#include "forkfeed/client.h"
#include "remote/net_address.h"
#include "tests/testing/daemon_process.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class GatewayRestartTest : public testing::DaemonSuite<GatewayRestartTest> {
 protected:
  static void SetUpTestSuite() {
    ::setenv("UCX_TLS", "tcp", 1);  // before any UCX context: the network path
    ::setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    make_dataset(16, 2, 31, 40, 80);
  }

  void SetUp() override {
    token_ = dir_->path() + "/token-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(token_) << "gateway-restart-test-token\n";
    ASSERT_EQ(::chmod(token_.c_str(), 0600), 0);
  }

  std::unique_ptr<testing::DaemonProcess> start(const std::string& name) {
    return std::make_unique<testing::DaemonProcess>(
        socket_path(name), std::vector<std::string>{"--max-workers", "1", "--dataset", "train=" + root_,
                                                    "--listen", "127.0.0.1:0", "--token-file", token_});
  }

  // The gateway's part of the daemon's stats; null if the daemon cannot be asked.
  static json gateway_stats(const testing::DaemonProcess& daemon) {
    const json stats = testing::daemon_stats(daemon.socket());
    if (!stats.contains("daemon") || !stats["daemon"].contains("gateway")) return json();
    return stats["daemon"]["gateway"];
  }

  // Reads a whole pass from the daemon at `address` as a remote client.
  std::size_t remote_pass(const std::string& address) {
    StreamOptions s;
    s.loader = stream_options(1, 4);
    s.loader.image_folder.clear();
    s.dataset = "train";
    auto client = Client::connect(RemoteDaemon{address, token_}, s);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? testing::read_pass(**client).size() : 0;
  }

  // Waits until the daemon has failed `tries` starts of a gateway in a row; false (and
  // what its stats said) after 20 s.
  static bool failed_tries(const testing::DaemonProcess& daemon, std::uint64_t tries, json& seen) {
    return testing::eventually(
        [&] {
          seen = gateway_stats(daemon);
          return seen.is_object() && seen.value("failures_in_a_row", 0u) >= tries;
        },
        20s);
  }

  // Waits until a gateway serves at `address` again, within the back-off's longest wait
  // and a start.
  static bool serving_at(const testing::DaemonProcess& daemon, const std::string& address) {
    return testing::eventually([&] { return testing::remote_address(daemon) == address; }, 45s);
  }

  std::string token_;
};

// A token rotated by removing the old file before the new one is in place, while the
// gateway happens to die: the daemon's first try to start another one fails.
TEST_F(GatewayRestartTest, AGatewayWhoseTokenFileIsGoneIsTriedAgainUntilItServes) {
  testing::HangGuard guard(120, "GatewayRestartTest.Token");
  auto daemon = start("token");
  const std::string address = testing::remote_address(*daemon);
  ASSERT_FALSE(address.empty());
  EXPECT_EQ(remote_pass(address), 4u);
  const json before = gateway_stats(*daemon);
  const pid_t first = testing::gateway_of(daemon->pid());
  ASSERT_GT(first, 0);
  EXPECT_TRUE(before.is_object() && before.value("state", "") == "serving" &&
              before.value("pid", -1) == first)
      << "the daemon's stats do not show its gateway serving: "
      << testing::daemon_stats(daemon->socket()).dump();

  const std::string aside = token_ + ".rotating";
  ASSERT_EQ(std::rename(token_.c_str(), aside.c_str()), 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  json seen;
  if (failed_tries(*daemon, 2, seen)) {
    EXPECT_EQ(seen.value("state", ""), "starting again") << seen.dump();
    EXPECT_TRUE(seen["pid"].is_null()) << seen.dump();
    EXPECT_NE(seen.value("last_error", "").find(token_), std::string::npos)
        << "the reason does not name the token file: " << seen.dump();
    EXPECT_TRUE(seen.contains("next_try_in_s")) << seen.dump();
  } else {
    ADD_FAILURE() << "the daemon's stats show no second try to start the gateway: " << seen.dump();
  }
  EXPECT_TRUE(testing::remote_address(*daemon).empty()) << "no gateway listens meanwhile";

  ASSERT_EQ(std::rename(aside.c_str(), token_.c_str()), 0);  // the new token is in place
  ASSERT_TRUE(serving_at(*daemon, address))
      << "no gateway at " << address << " again: " << gateway_stats(*daemon).dump();
  const json after = gateway_stats(*daemon);
  ASSERT_TRUE(after.is_object()) << testing::daemon_stats(daemon->socket()).dump();
  EXPECT_EQ(after.value("state", ""), "serving") << after.dump();
  EXPECT_EQ(after.value("restarts", 0u), 1u) << after.dump();
  EXPECT_GE(after.value("failed_starts", 0u), 2u) << after.dump();
  EXPECT_EQ(after.value("failures_in_a_row", 1u), 0u) << after.dump();
  EXPECT_EQ(remote_pass(address), 4u) << "a remote client is not served again";
}

// The port taken by another process in the moment between the gateway's death and its
// replacement (here: the daemon held stopped meanwhile, the port held by the test).
TEST_F(GatewayRestartTest, AGatewayWhosePortIsTakenIsTriedAgainUntilItServes) {
  testing::HangGuard guard(120, "GatewayRestartTest.Port");
  auto daemon = start("port");
  const std::string address = testing::remote_address(*daemon);
  ASSERT_FALSE(address.empty());
  const pid_t first = testing::gateway_of(daemon->pid());
  ASSERT_GT(first, 0);

  ASSERT_EQ(::kill(daemon->pid(), SIGSTOP), 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(testing::eventually([&] { return testing::process_state(first) == 'Z'; }, 10s))
      << "the gateway did not die";  // its parent is stopped: it stays a zombie
  auto where = parse_net_address(address, "address");
  ASSERT_TRUE(where.ok()) << where.status().message();
  UniqueFd squatter(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  ASSERT_EQ(::setsockopt(squatter.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
  // The leader shows 'Z' as soon as it exits, but the gateway's fds (its port) are closed
  // only when its last thread has exited too: bind once they are.
  int bind_errno = 0;
  ASSERT_TRUE(testing::eventually(
      [&] {
        if (::bind(squatter.get(), reinterpret_cast<const sockaddr*>(&*where), sizeof(sockaddr_in)) == 0)
          return true;
        bind_errno = errno;
        return false;
      },
      10s))
      << "the dead gateway's port " << address << " cannot be bound: " << std::strerror(bind_errno);
  ASSERT_EQ(::listen(squatter.get(), 1), 0);
  ASSERT_EQ(::kill(daemon->pid(), SIGCONT), 0);

  json seen;
  if (failed_tries(*daemon, 2, seen)) {
    EXPECT_NE(seen.value("last_error", "").find("in use"), std::string::npos)
        << "the reason does not say the port is taken: " << seen.dump();
  } else {
    ADD_FAILURE() << "the daemon's stats show no second try to start the gateway: " << seen.dump();
  }
  squatter.reset();  // the port is free again
  ASSERT_TRUE(serving_at(*daemon, address))
      << "no gateway at " << address << " again: " << gateway_stats(*daemon).dump();
  EXPECT_EQ(remote_pass(address), 4u) << "a remote client is not served again";
}

}  // namespace
}  // namespace forkfeed
