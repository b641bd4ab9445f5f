// forkfeedd's lifecycle: a client killed mid-epoch frees its stream (workers reaped,
// shared memory unmapped) within a second while others go on; SIGTERM closes every
// stream, reaps every worker, removes the socket and exits 0; a stale socket file is
// replaced at start, a live daemon's is not stolen.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "base/unique_fd.h"
#include "forkfeed/client.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

class DaemonLifecycleTest : public testing::DaemonSuite<DaemonLifecycleTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(24, 2, 9, 40, 80); }

  static LoaderOptions options() { return stream_options(2, 2); }
};

// The bound. Under ASan every worker runs LeakSanitizer as it exits, which on a
// loaded 2-core CI machine alone can take longer than that.
#if defined(__SANITIZE_ADDRESS__)
constexpr auto kFreedWithin = std::chrono::seconds(5);
#else
constexpr auto kFreedWithin = std::chrono::seconds(1);
#endif

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A trainer process: connects, reads two batches, says so on `ready`, and waits to be killed.
pid_t start_trainer(const std::string& socket, const LoaderOptions& options, int ready) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  auto client = Client::connect(socket, options);
  if (!client.ok()) ::_exit(3);
  for (int i = 0; i < 2; ++i) {
    auto b = (*client)->next();
    if (!b.ok()) ::_exit(4);
  }
  const char one = 1;
  (void)!::write(ready, &one, 1);
  while (true) ::pause();
}

TEST_F(DaemonLifecycleTest, KilledClientIsFreedWithinASecondOthersGoOn) {
  testing::HangGuard guard(60, "DaemonLifecycleTest.KilledClient");
  testing::DaemonProcess daemon(socket_path("kill"), {"--max-workers", "2"});
  auto survivor = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(survivor.ok()) << survivor.status().message();
  ASSERT_EQ(testing::read_batches(**survivor, 3).size(), 3u);
  const std::size_t workers_alone = testing::children_of(daemon.pid()).size();
  const int arenas_alone = testing::memfd_mappings(daemon.pid(), "forkfeed-arena");
  const int channels_alone = testing::memfd_mappings(daemon.pid(), "forkfeed-channel");
  EXPECT_EQ(workers_alone, 2u);
  EXPECT_GE(arenas_alone, 1);

  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t trainer = start_trainer(daemon.socket(), options(), ready[1]);
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the trainer process did not get its batches";
  ::close(ready[0]);
  EXPECT_EQ(testing::children_of(daemon.pid()).size(), 2u) << "one pool serves both streams";
  EXPECT_GT(testing::memfd_mappings(daemon.pid(), "forkfeed-arena"), arenas_alone);

  ::kill(trainer, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(trainer, &status, 0), trainer);
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_TRUE(testing::eventually(
      [&] {
        return testing::children_of(daemon.pid()).size() == workers_alone &&
               testing::memfd_mappings(daemon.pid(), "forkfeed-arena") == arenas_alone &&
               testing::memfd_mappings(daemon.pid(), "forkfeed-channel") == channels_alone;
      },
      kFreedWithin))
      << "after the client was killed the daemon still has " << testing::children_of(daemon.pid()).size()
      << " children and " << testing::memfd_mappings(daemon.pid(), "forkfeed-arena") << " arena mappings";
  std::printf("stream freed %.0f ms after the client was killed\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed).count());

  // The survivor's stream was not disturbed: the rest of its pass, then a whole one.
  const testing::Batches rest = testing::read_pass(**survivor);
  EXPECT_EQ(rest.size(), 12u - 3u);
  const testing::Batches whole = testing::read_pass(**survivor);
  EXPECT_EQ(testing::exactly_once(testing::indices_of(whole), 24), "");
}

TEST_F(DaemonLifecycleTest, SigtermClosesStreamsReapsWorkersRemovesSocket) {
  testing::HangGuard guard(60, "DaemonLifecycleTest.Sigterm");
  testing::DaemonProcess daemon(socket_path("term"), {"--max-workers", "2"});
  auto a = Client::connect(daemon.socket(), options());
  auto b = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(testing::read_batches(**a, 2).size(), 2u);  // mid-epoch
  const auto workers = testing::children_of(daemon.pid());
  EXPECT_EQ(workers.size(), 2u);

  const auto status = daemon.signal_and_wait(SIGTERM, std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << "forkfeedd did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  for (pid_t w : workers) EXPECT_FALSE(testing::alive(w)) << "worker " << w << " outlived the daemon";
  EXPECT_FALSE(exists(daemon.socket())) << "the socket file was left behind";

  auto next = (*a)->next();
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("shutting down"), std::string::npos) << next.status().message();
  EXPECT_FALSE((*b)->reset().ok() && (*b)->set_epoch(7).ok());
}

// A worker stopped (SIGSTOP) under a stream that waits for it, with no task_timeout,
// holds neither the stream of a client that went nor the daemon's SIGTERM.
TEST_F(DaemonLifecycleTest, AStreamWaitingForAStoppedWorkerEndsWithItsClientAndWithTheDaemon) {
  testing::HangGuard guard(60, "DaemonLifecycleTest.StoppedWorker");
  testing::DaemonProcess daemon(socket_path("stopped"), {"--max-workers", "1", "--max-streams", "1"});
  ASSERT_TRUE(testing::eventually([&] { return testing::children_of(daemon.pid()).size() == 1; },
                                  std::chrono::seconds(10)));
  const auto workers = testing::children_of(daemon.pid());
  ASSERT_EQ(::kill(workers[0], SIGSTOP), 0);
  {
    auto gone = Client::connect(daemon.socket(), options());  // its stream waits for the worker
    ASSERT_TRUE(gone.ok()) << gone.status().message();
  }
  // Its stream is freed: the only one allowed opens again.
  Result<std::unique_ptr<Client>> next = Status::Internal("not tried");
  EXPECT_TRUE(testing::eventually(
      [&] {
        next = Client::connect(daemon.socket(), options());
        return next.ok();
      },
      std::chrono::seconds(10)))
      << "the stream of a client that went was kept: " << next.status().message();
  const auto status = daemon.signal_and_wait(SIGTERM, std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << "forkfeedd did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  EXPECT_FALSE(testing::alive(workers[0])) << "the stopped worker outlived the daemon";
}

TEST_F(DaemonLifecycleTest, StaleSocketIsReplacedLiveOneIsNotStolen) {
  testing::HangGuard guard(60, "DaemonLifecycleTest.StaleSocket");
  const std::string path = socket_path("stale");
  {  // what a crashed daemon leaves: a socket file nobody listens on
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  }
  ASSERT_TRUE(exists(path));
  ASSERT_FALSE(testing::connectable(path));
  testing::DaemonProcess first(path);
  ASSERT_TRUE(testing::connectable(path)) << "the stale socket was not replaced";

  testing::DaemonProcess second(path, {}, false);
  const auto status = second.wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << "a second daemon on a live socket did not give up";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
  auto client = Client::connect(path, options());
  ASSERT_TRUE(client.ok()) << "the first daemon lost its socket: " << client.status().message();
  EXPECT_EQ(testing::read_pass(**client).size(), 12u);

  // A file that is not a socket is never removed.
  const std::string file = dir_->path() + "/not-a-socket";
  std::ofstream(file) << "precious";
  testing::DaemonProcess third(file, {}, false);
  const auto refused = third.wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(WIFEXITED(*refused) && WEXITSTATUS(*refused) != 0);
  EXPECT_TRUE(exists(file));
}

}  // namespace
}  // namespace forkfeed
