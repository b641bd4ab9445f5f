// The client's end of the forkfeedd socket against daemons that misbehave: one that
// accepts and never answers makes the client, forkfeed-ctl and forkfeed-bench --daemon
// fail within their timeout with an error naming the socket (never a hang); one that
// stops reading and then gives its reason is reported with that reason, not as
// "Broken pipe".
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/daemon_connection.h"
#include "daemon/listener.h"
#include "forkfeed/client.h"
#include "protocol/frame.h"
#include "tests/testing/command.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using namespace std::chrono_literals;

constexpr const char* kResponsive = "is forkfeedd running and responsive?";

void expect_timeout_error(const std::string& message, const std::string& socket) {
  EXPECT_NE(message.find(socket), std::string::npos) << message;
  EXPECT_NE(message.find(kResponsive), std::string::npos) << message;
}

// A socket that accepts connections (the kernel does, into the backlog) and never answers.
TEST(DaemonConnectionTest, ASocketThatNeverAnswersTimesOut) {
  testing::HangGuard guard(120, "DaemonConnectionTest.NeverAnswers");
  testing::TempDir dir;
  const std::string socket = dir.path() + "/mute.sock";
  auto mute = Listener::bind(socket, false);
  ASSERT_TRUE(mute.ok()) << mute.status().message();

  auto connection = DaemonConnection::connect(socket, 300ms);
  ASSERT_FALSE(connection.ok());
  expect_timeout_error(connection.status().message(), socket);

  LoaderOptions loader;
  loader.image_folder = dir.path();
  StreamOptions options{loader, {}};
  options.connect_timeout = 300ms;
  auto client = Client::connect(socket, options);
  ASSERT_FALSE(client.ok());
  expect_timeout_error(client.status().message(), socket);

  const auto ctl = testing::run_command(
      {std::string(FORKFEED_BIN_DIR) + "/forkfeed-ctl", "--socket", socket, "--timeout", "0.3", "stats"},
      dir.path(), std::chrono::seconds(60));
  EXPECT_TRUE(ctl.exited && ctl.code != 0) << ctl.describe();
  expect_timeout_error(ctl.err, socket);

  const std::string root = testing::make_image_folder(dir.path(), 4, 2, 1, 20, 30);
  const auto bench = testing::run_command({std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench", "--data", root,
                                           "--daemon", socket, "--connect-timeout", "0.3"},
                                          dir.path(), std::chrono::seconds(60));
  EXPECT_TRUE(bench.exited && bench.code != 0) << bench.describe();
  expect_timeout_error(bench.err, socket);
}

// A daemon that answers requests until told to refuse; then it stops reading (a write to
// it fails at once with EPIPE) and a moment later sends its reason in a notice.
class RefusingDaemon {
 public:
  explicit RefusingDaemon(const std::string& socket)
      : listener_(Listener::bind(socket, false).value()), thread_([this] { serve(); }) {}
  ~RefusingDaemon() {
    refuse_.store(true);
    thread_.join();
  }
  void refuse() { refuse_.store(true); }
  // Waits until it stopped reading.
  bool wait_stopped_reading() {
    return stopped_reading_.get_future().wait_for(20s) == std::future_status::ready;
  }

  static constexpr const char* kReason = "refused: the test daemon says no";

 private:
  void serve() {
    pollfd l{listener_.fd(), POLLIN, 0};
    if (::poll(&l, 1, 20000) != 1) return;
    auto peer = listener_.accept();
    if (!peer.ok() || !peer->socket.valid()) return;
    const int fd = peer->socket.get();
    while (!refuse_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10) != 1) continue;
      if (!recv_frame(fd, false).ok()) return;
      (void)send_frame(fd, MessageType::kReply, R"({"ok":true})");
    }
    ::shutdown(fd, SHUT_RD);
    stopped_reading_.set_value();
    std::this_thread::sleep_for(100ms);  // the client's write fails before the reason arrives
    (void)send_frame(fd, MessageType::kNotice, nlohmann::json{{"error", kReason}}.dump());
  }

  Listener listener_;
  std::atomic<bool> refuse_{false};
  std::promise<void> stopped_reading_;
  std::thread thread_;
};

TEST(DaemonConnectionTest, ARefusedRequestReportsTheDaemonsReasonNotBrokenPipe) {
  testing::HangGuard guard(60, "DaemonConnectionTest.Refused");
  testing::TempDir dir;
  RefusingDaemon daemon(dir.path() + "/refusing.sock");
  auto connection = DaemonConnection::connect(dir.path() + "/refusing.sock", 20s);
  ASSERT_TRUE(connection.ok()) << connection.status().message();
  daemon.refuse();
  ASSERT_TRUE(daemon.wait_stopped_reading());
  auto reply = connection->request(MessageType::kStats, nlohmann::json::object());
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.status().message().find(RefusingDaemon::kReason), std::string::npos)
      << reply.status().message();
  EXPECT_EQ(reply.status().message().find("Broken pipe"), std::string::npos) << reply.status().message();
}

// Serves one connection on `listener` with `serve`, on a thread of its own.
std::thread serve_one(Listener& listener, std::function<void(int)> serve) {
  return std::thread([&listener, serve = std::move(serve)] {
    for (int i = 0; i < 2000; ++i) {
      auto peer = listener.accept();
      if (peer.ok() && peer->socket.valid()) return serve(peer->socket.get());
      std::this_thread::sleep_for(10ms);
    }
  });
}

// A daemon from before the hello answers it with an error reply; that still is an answer.
TEST(DaemonConnectionTest, AnErrorReplyToTheHelloIsAnAnswer) {
  testing::HangGuard guard(60, "DaemonConnectionTest.OldDaemon");
  testing::TempDir dir;
  const std::string socket = dir.path() + "/old.sock";
  auto listener = Listener::bind(socket, false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  std::thread daemon = serve_one(*listener, [](int fd) {
    if (!recv_frame(fd, false).ok()) return;
    (void)send_frame(fd, MessageType::kReply,
                     R"({"ok":false,"code":"invalid_argument","error":"unknown message type 5"})");
    (void)recv_frame(fd, false);  // until the client closes
  });
  {
    auto connection = DaemonConnection::connect(socket, 20s);
    EXPECT_TRUE(connection.ok()) << connection.status().message();
  }
  daemon.join();
}

// forkfeed-ctl's --timeout bounds its stats request too, not only the hello.
TEST(DaemonConnectionTest, CtlTimesOutOnAnUnansweredRequest) {
  testing::HangGuard guard(60, "DaemonConnectionTest.CtlRequest");
  testing::TempDir dir;
  const std::string socket = dir.path() + "/slow.sock";
  auto listener = Listener::bind(socket, false);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  std::thread daemon = serve_one(*listener, [](int fd) {
    if (!recv_frame(fd, false).ok()) return;
    (void)send_frame(fd, MessageType::kReply, R"({"ok":true,"protocol":2})");
    (void)recv_frame(fd, false);  // the stats request: never answered
    (void)recv_frame(fd, false);  // until the client closes
  });
  const auto start = std::chrono::steady_clock::now();
  const auto ctl = testing::run_command(
      {std::string(FORKFEED_BIN_DIR) + "/forkfeed-ctl", "--socket", socket, "--timeout", "0.3", "stats"},
      dir.path(), std::chrono::seconds(30));
  EXPECT_TRUE(ctl.exited && ctl.code == 1) << ctl.describe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << ctl.describe();
  EXPECT_NE(ctl.err.find("did not answer"), std::string::npos) << ctl.err;
  daemon.join();
}

}  // namespace
}  // namespace forkfeed
