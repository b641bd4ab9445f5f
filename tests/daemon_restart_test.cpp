// The daemon dies under a client: the client's next call fails with an error that says
// so (never a hang, never SIGBUS: held batches stay readable), state() still works, and
// a client connected to a restarted daemon with that state continues exactly.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "forkfeed/client.h"
#include "forkfeed/loader.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

class DaemonRestartTest : public testing::DaemonSuite<DaemonRestartTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(21, 3, 4, 40, 80); }

  static LoaderOptions options() {
    LoaderOptions o = stream_options(2, 3);  // 7 batches per epoch
    o.seed = 12;
    return o;
  }
};

TEST_F(DaemonRestartTest, ClientFailsClearlyThenResumesExactlyOnANewDaemon) {
  testing::HangGuard guard(90, "DaemonRestartTest.Resume");
  const std::string socket = dir_->path() + "/restart.sock";
  testing::Batches reference;
  {
    auto loader = Loader::open(options());
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    reference = testing::read_batches(**loader, 14);
  }
  for (std::size_t k : {2u, 9u}) {
    SCOPED_TRACE("daemon killed after " + std::to_string(k) + " batches");
    testing::Batches run;
    std::string state;
    {
      auto daemon = std::make_unique<testing::DaemonProcess>(socket);
      auto client = Client::connect(socket, options());
      ASSERT_TRUE(client.ok()) << client.status().message();
      run = testing::read_batches(**client, k);
      std::optional<Batch> held;  // held across the daemon's death
      for (int i = 0; i < 2 && !held; ++i) {
        auto next = (*client)->next();
        ASSERT_TRUE(next.ok()) << next.status().message();
        held = std::move(*next);
      }
      ASSERT_TRUE(held.has_value());
      ASSERT_TRUE(daemon->signal_and_wait(SIGKILL, std::chrono::seconds(10)).has_value());
      daemon.reset();

      auto next = (*client)->next();
      ASSERT_FALSE(next.ok()) << "next() succeeded after the daemon died";
      EXPECT_NE(next.status().message().find("lost the connection to forkfeedd"), std::string::npos)
          << next.status().message();
      EXPECT_FALSE((*client)->next().ok()) << "the error does not stay";
      EXPECT_FALSE((*client)->reset().ok());
      EXPECT_FALSE((*client)->stats().ok());
      run.emplace_back(*held);  // still mapped: no SIGBUS
      state = (*client)->state();
    }
    testing::DaemonProcess restarted(socket);  // replaces the dead daemon's socket file
    auto client = Client::connect(socket, options(), state);
    ASSERT_TRUE(client.ok()) << client.status().message();
    const testing::Batches rest = testing::read_batches(**client, 14 - run.size());
    run.insert(run.end(), rest.begin(), rest.end());
    EXPECT_EQ(testing::first_difference(run, reference), "");
  }
}

// A client asleep in next(), waiting for a batch, wakes up with an error when the daemon dies.
TEST_F(DaemonRestartTest, WaitingClientWakesWhenTheDaemonDies) {
  testing::HangGuard guard(60, "DaemonRestartTest.WaitingClient");
  const std::string socket = dir_->path() + "/waiting.sock";
  testing::DaemonProcess daemon(socket);
  auto client = Client::connect(socket, options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  ASSERT_EQ(testing::read_batches(**client, 1).size(), 1u);
  ::kill(daemon.pid(), SIGSTOP);  // delivers nothing more: the client will have to wait
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(daemon.pid(), SIGKILL);
  });
  Status error;
  for (int i = 0; i < 100 && error.ok(); ++i) {
    auto next = (*client)->next();
    if (!next.ok()) error = next.status();
  }
  killer.join();
  ASSERT_FALSE(error.ok()) << "the client never noticed the daemon's death";
  EXPECT_NE(error.message().find("lost the connection"), std::string::npos) << error.message();
}

}  // namespace
}  // namespace forkfeed
