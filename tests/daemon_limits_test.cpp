// forkfeedd's limits and configuration: streams and arena bytes never exceed the limits
// (a request over one gets an error naming it), every stream shares the one pool of
// workers (never refused for want of one), forkfeed-ctl stats reports every stream, and the YAML config and
// its flags take effect. Only the daemon's user, and uids it allows, may connect. Connections that never
// speak are closed after a deadline and cannot lock anyone out.
//
// Over 300 lines on purpose: one case per limit or config key, each against a real
// forkfeedd started the same way; splitting it would copy the fixture.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/daemon_connection.h"
#include "forkfeed/client.h"
#include "protocol/frame.h"
#include "tests/testing/command.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

class DaemonLimitsTest : public testing::DaemonSuite<DaemonLimitsTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(12, 2, 6, 40, 70); }

  static LoaderOptions options(std::uint32_t workers = 1) { return stream_options(workers, 3); }
};

// The reason in the notice the daemon sends on `fd` before closing it (waiting up to
// 20 s for it), or what came instead.
std::string closing_notice(int fd) {
  const timeval timeout{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  auto frame = recv_frame(fd, false);
  if (!frame.ok()) return "no notice: " + frame.status().message();
  if (frame->type != static_cast<std::uint16_t>(MessageType::kNotice)) {
    return "not a notice but message type " + std::to_string(frame->type);
  }
  const auto body = nlohmann::json::parse(frame->payload, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_string())
    return "a notice without a reason";
  return body["error"].get<std::string>();
}

void expect_refused(const Result<std::unique_ptr<Client>>& client, const std::string& limit) {
  ASSERT_FALSE(client.ok()) << "admitted over " << limit;
  EXPECT_EQ(client.status().code(), Status::Code::kResourceExhausted) << client.status().message();
  EXPECT_NE(client.status().message().find(limit), std::string::npos) << client.status().message();
}

TEST_F(DaemonLimitsTest, MaxStreams) {
  testing::HangGuard guard(60, "DaemonLimitsTest.MaxStreams");
  testing::DaemonProcess daemon(socket_path("streams"), {"--max-streams", "2", "--max-workers", "2"});
  auto a = Client::connect(daemon.socket(), options());
  auto b = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(a.ok() && b.ok());
  expect_refused(Client::connect(daemon.socket(), options()), "max_streams");
  a = Status::Internal("closed");  // frees its place
  Result<std::unique_ptr<Client>> c = Status::Internal("not yet");
  EXPECT_TRUE(testing::eventually(
      [&] {
        c = Client::connect(daemon.socket(), options());
        return c.ok();
      },
      std::chrono::seconds(5)))
      << c.status().message();
}

// Destroying a Client returns once its stream's workers and memory are given back: a
// stream opened right after finds them free (an evaluation loop closes and reopens).
TEST_F(DaemonLimitsTest, AClosedStreamsWorkersAreFreeWhenCloseReturns) {
  testing::HangGuard guard(60, "DaemonLimitsTest.AClosedStream");
  testing::DaemonProcess daemon(socket_path("reopen"), {"--max-workers", "2"});
  auto kept = Client::connect(daemon.socket(), options(2));
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  for (int round = 0; round < 5; ++round) {
    auto eval = Client::connect(daemon.socket(), options(2));
    ASSERT_TRUE(eval.ok()) << "round " << round << ": " << eval.status().message();
    EXPECT_EQ((*eval)->workers(), 2u);
    (void)testing::read_pass(**eval);
  }  // each closed at the end of its round, the next opened at once
}

TEST_F(DaemonLimitsTest, EveryRankOfANodeIsServedByOnePoolOfWorkers) {
  testing::HangGuard guard(120, "DaemonLimitsTest.Workers");
  // Four ranks asking for 2 workers each, from a daemon of 2: none refused, two processes.
  testing::DaemonProcess daemon(socket_path("workers"), {"--max-workers", "2"});
  constexpr std::uint32_t kRanks = 4;
  std::vector<std::unique_ptr<Client>> ranks;
  for (std::uint32_t r = 0; r < kRanks; ++r) {
    LoaderOptions o = options(2);
    o.rank = r;
    o.world_size = kRanks;
    auto client = Client::connect(daemon.socket(), o);
    ASSERT_TRUE(client.ok()) << "rank " << r << ": " << client.status().message();
    EXPECT_EQ((*client)->workers(), 2u) << "a cap on its share, not a reservation";
    ranks.push_back(std::move(client).value());
  }
  EXPECT_EQ(testing::children_of(daemon.pid()).size(), 2u) << "workers of their own for some streams";
  // The ranks together read every sample once, whatever the worker count.
  std::vector<std::uint64_t> all;
  for (auto& rank : ranks) {
    const std::vector<std::uint64_t> mine = testing::indices_of(testing::read_pass(*rank));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  EXPECT_EQ(testing::exactly_once(all, 12), "");
  {  // a per-stream cap
    testing::DaemonProcess capped(socket_path("capped"), {"--max-workers", "8", "--max-stream-workers", "1"});
    auto d = Client::connect(capped.socket(), options(4));
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ((*d)->workers(), 1u);
  }
}

TEST_F(DaemonLimitsTest, ArenaBytes) {
  testing::HangGuard guard(60, "DaemonLimitsTest.ArenaBytes");
  // One stream of 1 worker, prefetch 2: 3 slots of 3 samples of 64x64x3 bytes = 110592 bytes.
  testing::DaemonProcess daemon(socket_path("arena"), {"--max-workers", "2", "--max-arena-bytes", "200K",
                                                       "--max-stream-arena-bytes", "120K"});
  LoaderOptions o = options();
  o.size = 64;
  auto a = Client::connect(daemon.socket(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  expect_refused(Client::connect(daemon.socket(), o), "max_arena_bytes");
  o.batch_size = 4;
  expect_refused(Client::connect(daemon.socket(), o), "max_stream_arena_bytes");
}

TEST_F(DaemonLimitsTest, CtlStatsReportsEveryStream) {
  testing::HangGuard guard(60, "DaemonLimitsTest.CtlStats");
  testing::DaemonProcess daemon(socket_path("stats"), {"--max-workers", "2"});
  auto a = Client::connect(daemon.socket(), options());
  auto b = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(testing::read_batches(**a, 3).size(), 3u);
  auto own = (*a)->stats();
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_GE(own->delivered_batches, 3u);

  const std::string command =
      std::string(FORKFEED_BIN_DIR) + "/forkfeed-ctl --socket " + daemon.socket() + " stats";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0) << out;
  const auto stats = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(stats.is_object()) << out;
  EXPECT_GT(stats["daemon"]["uptime_s"].get<double>(), 0.0);
  EXPECT_GT(stats["daemon"]["rss_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(stats["daemon"]["streams"].get<int>(), 2);
  EXPECT_EQ(stats["daemon"]["workers"].get<int>(), 2) << "the pool's size";
  ASSERT_EQ(stats["streams"].size(), 2u) << out;
  std::uint64_t delivered = 0;
  double shares = 0;
  for (const auto& s : stats["streams"]) {
    for (const char* key :
         {"images_per_s", "delivered_batches", "delivered_samples", "skipped_samples", "queue_depth",
          "worker_restarts", "workers", "arena_bytes", "worker_ns", "wait_ns", "worker_share"}) {
      EXPECT_TRUE(s.contains(key)) << key << " missing in " << s.dump();
    }
    delivered += s["delivered_batches"].get<std::uint64_t>();
    shares += s.value("worker_share", 0.0);
  }
  EXPECT_GE(delivered, 3u);
  EXPECT_NEAR(shares, 1.0, 1e-9) << "the streams' shares of the worker time they got";

  const std::string nowhere = std::string(FORKFEED_BIN_DIR) + "/forkfeed-ctl --socket " + dir_->path() +
                              "/nobody.sock stats 2>/dev/null";
  EXPECT_NE(std::system(nowhere.c_str()), 0);
}

// A stream's worker time in the stats is as of the request, not of its last delivery: a
// stream of big batches delivers seldom, and its share would lag by a batch.
TEST_F(DaemonLimitsTest, CtlStatsCountAStreamsWorkerTimeAsOfNow) {
  testing::HangGuard guard(120, "DaemonLimitsTest.WorkerTimeAsOfNow");
  testing::TempDir big;
  LoaderOptions o = testing::small_options(testing::make_image_folder(big.path(), 16, 2, 7, 500, 700), 1, 16);
  o.transform = "RandomResizedCrop(384), AugMix()";  // tens of ms a sample: one long batch, the whole pass
  o.size = 0;
  testing::DaemonProcess daemon(socket_path("as_of_now"), {"--max-workers", "1"});
  auto client = Client::connect(daemon.socket(), o);
  ASSERT_TRUE(client.ok()) << client.status().message();
  // The daemon works on the batch as soon as the stream is open; nothing is delivered
  // until the whole batch is done.
  nlohmann::json seen;
  const bool counted_part_way = testing::eventually(
      [&] {
        seen = testing::daemon_stats(daemon.socket());
        if (!seen.contains("streams") || seen["streams"].size() != 1) return false;
        const nlohmann::json& s = seen["streams"][0];
        return s.value("worker_ns", 0.0) > 0 && s.value("delivered_batches", 0.0) == 0;
      },
      std::chrono::seconds(30));
  EXPECT_TRUE(counted_part_way) << "worker time appeared only with a delivery: " << seen.dump();
  EXPECT_EQ(testing::read_pass(**client).size(), 1u);
}

TEST_F(DaemonLimitsTest, YamlConfigAndFlagsTakeEffect) {
  testing::HangGuard guard(60, "DaemonLimitsTest.Yaml");
  const std::string config = dir_->path() + "/forkfeedd.yaml";
  std::ofstream(config) << "log_level: warn\n"
                           "datasets:\n"
                           "  tiny: {image_folder: "
                        << root_
                        << "}\n"
                           "defaults: {size: 16, batch_size: 3}\n"
                           "limits:\n"
                           "  max_streams: 1\n"
                           "  max_workers: 4\n";
  StreamOptions named{options(), "tiny"};
  named.loader.image_folder.clear();
  {
    testing::DaemonProcess daemon(socket_path("yaml"), {"--config", config});
    auto a = Client::connect(daemon.socket(), named);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(testing::exactly_once(testing::indices_of(testing::read_pass(**a)), 12), "");
    expect_refused(Client::connect(daemon.socket(), named), "max_streams");
  }
  {
    testing::DaemonProcess daemon(socket_path("yaml-flags"), {"--config", config, "--max-streams", "2"});
    auto a = Client::connect(daemon.socket(), named);
    auto b = Client::connect(daemon.socket(), named);
    EXPECT_TRUE(a.ok() && b.ok()) << "the flag did not override the file";
  }
  {  // the example in the repository is valid
    testing::DaemonProcess daemon(socket_path("example"),
                                  {"--config", std::string(FORKFEED_SOURCE_DIR) + "/config/forkfeedd.yaml"});
    EXPECT_TRUE(testing::connectable(daemon.socket()));
  }
  {  // a bad key is named, and the daemon does not start
    std::ofstream(config) << "limits:\n  max_stream: 3\n";
    testing::DaemonProcess daemon(socket_path("bad"), {"--config", config}, false);
    const auto status = daemon.wait_exit(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
  }
}

// More connections that never speak than streams and spare places together: the oldest
// make room, each told why, and a client and forkfeed-ctl are served as ever.
TEST_F(DaemonLimitsTest, SilentConnectionsLockNobodyOut) {
  testing::HangGuard guard(120, "DaemonLimitsTest.SilentConnections");
  // 64 connections without a stream; a deadline long enough that only the budget
  // closes the silent connections here.
  testing::DaemonProcess daemon(socket_path("silent"), {"--max-workers", "2", "--max-pending-connections",
                                                        "64", "--handshake-timeout-ms", "120000"});
  std::vector<UniqueFd> silent;
  for (int i = 0; i < 64 + 32; ++i) {
    silent.push_back(testing::connect_unix(daemon.socket()));
    ASSERT_TRUE(silent.back().valid()) << "connection " << i;
    if (i == 63) std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // silent long enough to go
  }
  auto client = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_EQ(testing::read_batches(**client, 2).size(), 2u);
  const auto ctl = testing::run_command(
      {std::string(FORKFEED_BIN_DIR) + "/forkfeed-ctl", "--socket", daemon.socket(), "stats"}, dir_->path(),
      std::chrono::seconds(60));
  EXPECT_TRUE(ctl.exited && ctl.code == 0) << ctl.describe();
  EXPECT_NE(ctl.out.find("\"streams\":1"), std::string::npos) << ctl.out;
  const std::string why = closing_notice(silent.front().get());
  EXPECT_NE(why.find("max_pending_connections"), std::string::npos) << why;
}

// A burst: with the budget full of connections that just arrived, the newcomer is
// refused with a notice rather than one of them cut before its hello is read.
TEST_F(DaemonLimitsTest, ABurstIsNotCrowdedOutByItself) {
  testing::HangGuard guard(60, "DaemonLimitsTest.Burst");
  testing::DaemonProcess daemon(socket_path("burst"),
                                {"--max-pending-connections", "2", "--handshake-timeout-ms", "120000"});
  // The readiness probe's connection must be gone before the budget of two is counted.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  UniqueFd first = testing::connect_unix(daemon.socket());
  UniqueFd second = testing::connect_unix(daemon.socket());
  UniqueFd third = testing::connect_unix(daemon.socket());
  ASSERT_TRUE(first.valid() && second.valid() && third.valid());
  const std::string why = closing_notice(third.get());
  EXPECT_NE(why.find("max_pending_connections"), std::string::npos) << why;
  for (int fd : {first.get(), second.get()}) {
    ASSERT_TRUE(send_frame(fd, MessageType::kHello, "{}").ok());
    auto reply = recv_frame(fd, false);
    ASSERT_TRUE(reply.ok()) << reply.status().message();
    EXPECT_EQ(reply->type, static_cast<std::uint16_t>(MessageType::kReply));
  }
}

// Requests answered do not extend the deadline: a connection that keeps asking without
// opening a stream is closed handshake_timeout_ms after it connected.
TEST_F(DaemonLimitsTest, ChattyConnectionsWithoutAStreamAreClosedAtTheDeadline) {
  testing::HangGuard guard(60, "DaemonLimitsTest.Chatty");
  testing::DaemonProcess daemon(socket_path("chatty"), {"--handshake-timeout-ms", "500"});
  UniqueFd chatty = testing::connect_unix(daemon.socket());
  ASSERT_TRUE(chatty.valid());
  const timeval timeout{5, 0};
  ::setsockopt(chatty.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    if (!send_frame(chatty.get(), MessageType::kHello, "{}").ok()) break;
    auto frame = recv_frame(chatty.get(), false);
    closed = !frame.ok() || frame->type == static_cast<std::uint16_t>(MessageType::kNotice);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3)) << "kept its place by asking";
}

// A connection that sends nothing, or half a header, is closed after the handshake
// deadline with a notice naming it.
TEST_F(DaemonLimitsTest, SilentConnectionsAreClosedAfterTheHandshakeDeadline) {
  testing::HangGuard guard(90, "DaemonLimitsTest.HandshakeDeadline");
  testing::DaemonProcess daemon(socket_path("deadline"), {"--handshake-timeout-ms", "200"});
  UniqueFd silent = testing::connect_unix(daemon.socket());
  UniqueFd partial = testing::connect_unix(daemon.socket());
  ASSERT_TRUE(silent.valid() && partial.valid());
  const FrameHeader half{kFrameMagic, kProtocolVersion, 0, 0, 0};
  ASSERT_EQ(::send(partial.get(), &half, sizeof half / 2, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof half / 2));
  for (int fd : {silent.get(), partial.get()}) {
    const std::string why = closing_notice(fd);
    EXPECT_NE(why.find("handshake_timeout_ms"), std::string::npos) << why;
    char byte = 0;
    EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "still open after the notice";
  }
  // The daemon still serves.
  auto client = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
}

// A client whose connection the daemon closed learns the daemon's reason from its next
// request.
TEST_F(DaemonLimitsTest, AClosedConnectionReportsTheDaemonsReason) {
  testing::HangGuard guard(90, "DaemonLimitsTest.ClosedReason");
  testing::DaemonProcess daemon(socket_path("reason"), {"--handshake-timeout-ms", "200"});
  auto connection = DaemonConnection::connect(daemon.socket());
  ASSERT_TRUE(connection.ok()) << connection.status().message();
  // Idle past the deadline, until the daemon closes the connection.
  pollfd p{connection->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 20000), 1) << "the daemon did not close an idle connection";
  auto reply = connection->request(MessageType::kStats, nlohmann::json::object());
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.status().message().find("handshake_timeout_ms"), std::string::npos)
      << reply.status().message();
}

// Run as root only: a child that becomes another user is refused, unless allowed — and
// then it may open named datasets only.
TEST_F(DaemonLimitsTest, OtherUsersAreRefusedUnlessAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  testing::HangGuard guard(60, "DaemonLimitsTest.OtherUsers");
  constexpr uid_t kNobody = 65534;
  // Outside the test's private folder, so that the other user can reach the socket.
  const std::string socket = "/tmp/forkfeed-uid-test-" + std::to_string(::getpid()) + ".sock";
  auto as_nobody = [&](const StreamOptions& o) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::setresgid(kNobody, kNobody, kNobody) != 0 || ::setresuid(kNobody, kNobody, kNobody) != 0)
        ::_exit(9);
      auto client = Client::connect(socket, o);
      if (!client.ok()) {
        // Refused by the socket's mode, or with the daemon's reason whatever the timing.
        const std::string& why = client.status().message();
        ::_exit(why.find("Permission denied") != std::string::npos ||
                        why.find("allow_uids") != std::string::npos ||
                        why.find("named in forkfeedd") != std::string::npos
                    ? 1
                    : 3);
      }
      auto batch = (*client)->next();
      ::_exit(batch.ok() ? 0 : 2);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  StreamOptions named{options(), "tiny"};
  named.loader.image_folder.clear();
  {
    testing::DaemonProcess daemon(socket, {"--dataset", "tiny=" + root_});
    EXPECT_EQ(as_nobody(named), 1) << "another user was served";
  }
  {  // the socket lets others connect (another uid is allowed): the daemon refuses, saying why
    testing::DaemonProcess daemon(socket, {"--dataset", "tiny=" + root_, "--allow-uid", "12345"});
    EXPECT_EQ(as_nobody(named), 1) << "another user was served, or not told why";
  }
  {
    testing::DaemonProcess daemon(socket,
                                  {"--dataset", "tiny=" + root_, "--allow-uid", std::to_string(kNobody)});
    EXPECT_EQ(as_nobody(named), 0) << "an allowed user was not served a named dataset";
    EXPECT_EQ(as_nobody(StreamOptions{options(), {}}), 1) << "an allowed user opened a path of its choosing";
  }
}

}  // namespace
}  // namespace forkfeed
