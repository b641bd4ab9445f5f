// One rank drawn from several remote daemons (a fan-in), over loopback TCP (UCX_TLS=tcp):
// the stream is the local Loader's over epochs and ranks with two and three daemons; a
// daemon SIGKILLed before the first batch, mid-epoch, at an epoch boundary or during a
// resume loses and repeats nothing; a stopped (hung) daemon is routed around within the
// overdue time; a state taken while one is down resumes a Loader exactly; a daemon that
// comes back at its address rejoins; all of them gone is an error within 3 s. Daemons
// serving the same files at different paths are one dataset; other images under the same
// names are refused at connect and at a rejoin, naming what differs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

#include "client/daemon_connection.h"
#include "forkfeed/client.h"
#include "loader/stats_fields.h"
#include "protocol/stream_request.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class FanInTest : public testing::DaemonSuite<FanInTest> {
 protected:
  static void SetUpTestSuite() {
    ::setenv("UCX_TLS", "tcp", 1);  // before any UCX context: the network path
    ::setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    make_dataset(96, 3, 23, 40, 90);
    token_ = dir_->path() + "/token";
    std::ofstream(token_) << "fan-in-token-of-this-suite\n";
    ::chmod(token_.c_str(), 0600);
  }

  // A daemon serving the suite's dataset as "train" at `listen`.
  static std::unique_ptr<testing::DaemonProcess> start(const std::string& name,
                                                       const std::string& listen = "127.0.0.1:0") {
    return std::make_unique<testing::DaemonProcess>(
        socket_path(name), std::vector<std::string>{"--max-workers", "1", "--dataset", "train=" + root_,
                                                    "--listen", listen, "--token-file", token_});
  }

  static LoaderOptions options(std::uint32_t rank = 0, std::uint32_t world = 1) {
    LoaderOptions o = stream_options(1, 4);  // 24 batches per epoch for one rank
    o.rank = rank;
    o.world_size = world;
    o.seed = 5;
    return o;
  }

  static StreamOptions stream() {
    StreamOptions s;
    s.loader = options();
    s.loader.image_folder.clear();
    s.dataset = "train";
    return s;
  }

  static std::unique_ptr<Client> connect(const std::vector<std::string>& addresses, std::uint32_t rank = 0,
                                         std::uint32_t world = 1, std::string_view state = {},
                                         std::chrono::milliseconds overdue = kDefaultOverdue) {
    StreamOptions s;
    s.loader = options(rank, world);
    s.loader.image_folder.clear();
    s.dataset = "train";
    s.overdue = overdue;
    std::vector<RemoteDaemon> daemons;
    for (const std::string& a : addresses) daemons.push_back(RemoteDaemon{a, token_});
    auto client = Client::connect(daemons, s, state);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // Reads `count` batches of `client` and of `loader`, across epoch ends; both
  // sequences must be equal.
  static void expect_same(Client& client, Loader& loader, std::size_t count, const std::string& what) {
    const testing::Batches got = testing::read_batches(client, count);
    const testing::Batches want = testing::read_batches(loader, count);
    EXPECT_TRUE(got == want) << what << ": the fan-in stream differs from the Loader's (" << got.size()
                             << " of " << count << " batches read)";
  }

  static inline std::string token_;
};

std::vector<std::string> addresses_of(const std::vector<std::unique_ptr<testing::DaemonProcess>>& daemons) {
  std::vector<std::string> out;
  for (const auto& d : daemons) out.push_back(testing::remote_address(*d));
  return out;
}

TEST_F(FanInTest, TwoAndThreeDaemonsGiveTheLoadersStreamOverThreeEpochsAndTwoRanks) {
  testing::HangGuard guard(180, "FanInTest.Equals");
  std::vector<std::unique_ptr<testing::DaemonProcess>> daemons;
  for (const char* name : {"eq0", "eq1", "eq2"}) daemons.push_back(start(name));
  const std::vector<std::string> all = addresses_of(daemons);
  for (std::size_t k : {2u, 3u}) {
    const std::vector<std::string> some(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k));
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
      auto client = connect(some, rank, 2);
      ASSERT_TRUE(client);
      auto loader = testing::open_loader(options(rank, 2));
      for (int epoch = 0; epoch < 3; ++epoch) {
        const testing::Batches got = testing::read_pass(*client);
        const testing::Batches want = testing::read_pass(*loader);
        ASSERT_EQ(got.size(), 12u);
        EXPECT_TRUE(got == want) << k << " daemons, rank " << rank << ", epoch " << epoch;
      }
      EXPECT_EQ(client->state(), loader->state());
      for (const RemoteDaemonStats& d : client->daemons()) {
        EXPECT_GT(d.batches, 0u) << d.address << " served nothing: the pass was not shared";
        EXPECT_TRUE(d.up);
        EXPECT_EQ(d.losses, 0u);
      }
    }
  }
}

// Every LoaderStats field (loader/stats_fields.h's table, enumerated) on each face after
// the same pass: a Loader's, a local Client's and a fan-in Client's over two daemons. The
// caller's own counts are the same on all three, the first stream's the same on both
// Clients, and a sum is not left out. (Exact sums: stats_fields_test.)
TEST_F(FanInTest, EveryStatReachesEachFaceByItsRule) {
  testing::HangGuard guard(120, "FanInTest.Stats");
  std::vector<std::unique_ptr<testing::DaemonProcess>> daemons;
  for (const char* name : {"st0", "st1"}) daemons.push_back(start(name));
  auto fan_in = connect(addresses_of(daemons));
  ASSERT_TRUE(fan_in);
  auto local = Client::connect(socket_path("st0"), stream());
  ASSERT_TRUE(local.ok()) << local.status().message();
  auto loader = testing::open_loader(options());
  ASSERT_EQ(testing::read_pass(*fan_in).size(), 24u);
  ASSERT_EQ(testing::read_pass(**local).size(), 24u);
  ASSERT_EQ(testing::read_pass(*loader).size(), 24u);
  const auto face = [](Result<LoaderStats> s) {
    EXPECT_TRUE(s.ok()) << s.status().message();
    nlohmann::json body = nlohmann::json::object();
    if (s.ok()) write_loader_stats(*s, body);
    return body;
  };
  const nlohmann::json of_loader = face(loader->stats()), of_local = face((*local)->stats()),
                       of_fan_in = face(fan_in->stats());
  LoaderStats fields;
  for_each_stat(fields, [&](const char* name, const auto&, StatMerge merge) {
    ASSERT_TRUE(of_loader.contains(name) && of_local.contains(name) && of_fan_in.contains(name)) << name;
    switch (merge) {
      case StatMerge::kClient:
        EXPECT_EQ(of_local[name], of_loader[name]) << name;
        EXPECT_EQ(of_fan_in[name], of_loader[name]) << name;
        break;
      case StatMerge::kFirst: EXPECT_EQ(of_fan_in[name], of_local[name]) << name; break;
      case StatMerge::kSum:  // two daemons' streams like the local one: zero on both or on neither
        EXPECT_EQ(of_fan_in[name] == 0, of_local[name] == 0)
            << name << ": " << of_fan_in[name] << " against " << of_local[name];
        break;
    }
  });
}

TEST_F(FanInTest, ADaemonKilledAtAnyPointLosesAndRepeatsNothing) {
  testing::HangGuard guard(180, "FanInTest.Kill");
  struct Point {
    std::size_t after;  // batches read before the kill
    const char* what;
  };
  for (const Point& p :
       {Point{0, "before the first batch"}, Point{9, "mid-epoch"}, Point{24, "at an epoch boundary"}}) {
    auto d0 = start("kill0");
    auto d1 = start("kill1");
    auto client = connect({testing::remote_address(*d0), testing::remote_address(*d1)});
    ASSERT_TRUE(client);
    auto loader = testing::open_loader(options());
    expect_same(*client, *loader, p.after, p.what);
    ASSERT_TRUE(d0->signal_and_wait(SIGKILL, 5s));
    expect_same(*client, *loader, 48 - p.after, std::string(p.what) + ", after the kill");
    EXPECT_EQ(client->state(), loader->state()) << p.what;
    const auto stats = client->daemons();
    EXPECT_FALSE(stats[0].up) << p.what;
    EXPECT_EQ(stats[0].losses, 1u) << p.what;
    EXPECT_NE(stats[0].last_error.find(stats[0].address), std::string::npos) << stats[0].last_error;
  }
}

TEST_F(FanInTest, ADaemonKilledDuringAResumeLosesNothingAndAStateTakenMeanwhileResumesALoader) {
  testing::HangGuard guard(120, "FanInTest.Resume");
  auto d0 = start("res0");
  auto d1 = start("res1");
  auto whole = testing::open_loader(options());
  const testing::Batches pass = testing::read_batches(*whole, 48);
  auto head = testing::open_loader(options());
  (void)testing::read_batches(*head, 17);
  auto client = connect({testing::remote_address(*d0), testing::remote_address(*d1)}, 0, 1, head->state());
  ASSERT_TRUE(client);
  ASSERT_TRUE(d1->signal_and_wait(SIGKILL, 5s));  // before the resumed stream's first batch came
  testing::Batches seen = testing::read_batches(*client, 10);
  // A state taken while daemon 1 is down resumes a plain Loader exactly.
  auto local = Loader::open(options(), client->state());
  ASSERT_TRUE(local.ok()) << local.status().message();
  const testing::Batches rest = testing::read_batches(**local, 48 - 27);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_TRUE(seen == testing::Batches(pass.begin() + 17, pass.end()))
      << "resume with a daemon killed, then a Loader from its state, differ from the undisturbed run";
}

TEST_F(FanInTest, AStoppedDaemonIsRoutedAroundWithinTheOverdueTime) {
  testing::HangGuard guard(120, "FanInTest.Stop");
  auto d0 = start("stop0");
  auto d1 = start("stop1");
  auto client = connect({testing::remote_address(*d0), testing::remote_address(*d1)}, 0, 1, {}, 500ms);
  ASSERT_TRUE(client);
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 5, "before the stop");
  // A hung node: the daemon and its gateway stop; their batches must come from daemon 1.
  const pid_t gateway = testing::gateway_of(d0->pid());
  ASSERT_GT(gateway, 0);
  ::kill(d0->pid(), SIGSTOP);
  ::kill(gateway, SIGSTOP);
  const Clock::time_point stopped = Clock::now();
  testing::Batches got;
  Clock::duration longest{};
  for (int i = 0; i < 19; ++i) {
    const Clock::time_point t = Clock::now();
    got.push_back(testing::read_batches(*client, 1).at(0));
    longest = std::max(longest, Clock::now() - t);
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stopped);
  // The next epoch starts on every daemon at once: the stopped one holds it up for the
  // overdue time, not for the 3 s it takes to be heard as silent.
  const Clock::time_point boundary = Clock::now();
  got.push_back(testing::read_batches(*client, 1).at(0));
  const auto crossing = Clock::now() - boundary;
  ::kill(gateway, SIGCONT);
  ::kill(d0->pid(), SIGCONT);
  EXPECT_TRUE(got == testing::read_batches(*loader, 20)) << "the stream around a stopped daemon differs";
  EXPECT_LT(crossing, 2000ms)
      << "the epoch boundary waited for the stopped daemon past the overdue time (0.5 s)";
  EXPECT_LT(longest, 2500ms) << "a wait for one batch outlasted the overdue time (0.5 s) by far";
  const auto stats = client->daemons();
  EXPECT_GT(stats[0].reassigned, 0u) << "nothing of the stopped daemon was asked of the other";
  EXPECT_GT(stats[1].batches, 19u);
  EXPECT_FALSE(stats[0].up) << "the stopped daemon did not start the next epoch: it is lost, to rejoin later";
  std::printf("[          ] 19 batches around a stopped daemon in %lld ms; longest wait %lld ms\n",
              static_cast<long long>(took.count()),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(longest).count()));
}

TEST_F(FanInTest, ADaemonBackAtItsAddressRejoinsAndEveryDaemonGoneIsAnErrorWithin3Seconds) {
  testing::HangGuard guard(120, "FanInTest.Rejoin");
  auto d0 = start("back0");
  auto d1 = start("back1");
  const std::string a0 = testing::remote_address(*d0);
  auto client = connect({a0, testing::remote_address(*d1)});
  ASSERT_TRUE(client);
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 3, "before the kill");
  ASSERT_TRUE(d0->signal_and_wait(SIGKILL, 5s));
  d0.reset();
  expect_same(*client, *loader, 3, "after the kill");
  // The client learns of the loss when its connection closes (the gateway dies after its
  // daemon): until then the daemon still counts as up.
  for (int i = 0; i < 200 && client->daemons()[0].up; ++i) {
    expect_same(*client, *loader, 1, "until the loss is seen");
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(client->daemons()[0].up) << "the client never saw the killed daemon go";
  d0 = start("back0b", a0);  // the same port
  const Clock::time_point restarted = Clock::now();
  while (!client->daemons()[0].up && Clock::now() - restarted < 20s) {
    expect_same(*client, *loader, 1, "while it comes back");
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(client->daemons()[0].up) << "the daemon back at " << a0 << " did not rejoin";
  // It serves again: batches go by credit, so it takes its share as soon as it has room
  // (within three epochs even on a loaded machine).
  const std::uint64_t before = client->daemons()[0].batches;
  for (int i = 0; i < 72 && client->daemons()[0].batches == before; ++i) {
    expect_same(*client, *loader, 1, "after the rejoin");
  }
  const RemoteDaemonStats back = client->daemons()[0];
  EXPECT_GT(back.batches, before) << "the daemon rejoined but served nothing: up " << back.up
                                  << ", duplicates " << back.duplicates << ", reassigned " << back.reassigned
                                  << ", losses " << back.losses << ", last error " << back.last_error;

  // Both gone while the client waits: an error naming them within 3 s.
  ASSERT_TRUE(d0->signal_and_wait(SIGKILL, 5s));
  ASSERT_TRUE(d1->signal_and_wait(SIGKILL, 5s));
  const Clock::time_point killed = Clock::now();
  Status status;
  for (int i = 0; i < 200 && status.ok(); ++i) {
    auto next = client->next();
    if (!next.ok()) status = next.status();
  }
  const auto took = Clock::now() - killed;
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kUnavailable) << status.message();
  EXPECT_NE(status.message().find(a0), std::string::npos) << status.message();
  EXPECT_LT(took, 3s) << status.message();
}

TEST_F(FanInTest, DaemonsServingOtherFilesAndAnAddressGivenTwiceAreRefused) {
  testing::HangGuard guard(60, "FanInTest.Refused");
  auto d0 = start("other0");
  testing::TempDir other_dir;
  const std::string other = testing::make_image_folder(other_dir.path(), 96, 3, 99, 40, 90);
  testing::DaemonProcess d1(socket_path("other1"), {"--max-workers", "1", "--dataset", "train=" + other,
                                                    "--listen", "127.0.0.1:0", "--token-file", token_});
  const std::string a0 = testing::remote_address(*d0), a1 = testing::remote_address(d1);
  StreamOptions s;
  s.loader = options();
  s.loader.image_folder.clear();
  s.dataset = "train";
  auto refused = Client::connect({RemoteDaemon{a0, token_}, RemoteDaemon{a1, token_}}, s);
  ASSERT_FALSE(refused.ok());
  // The same names and labels, other images: their sizes tell them apart.
  EXPECT_NE(refused.status().message().find(a1 + " serves another dataset (sizes differ in sample"),
            std::string::npos)
      << refused.status().message();
  // A refusal names the daemon that refused.
  testing::DaemonProcess d2(socket_path("other2"), {"--max-workers", "1", "--dataset", "val=" + other,
                                                    "--listen", "127.0.0.1:0", "--token-file", token_});
  const std::string a2 = testing::remote_address(d2);
  auto unnamed = Client::connect({RemoteDaemon{a0, token_}, RemoteDaemon{a2, token_}}, s);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_NE(unnamed.status().message().find(a2), std::string::npos) << unnamed.status().message();
  auto twice = Client::connect({RemoteDaemon{a0, token_}, RemoteDaemon{a0, token_}}, s);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("given twice"), std::string::npos) << twice.status().message();
}

// A dataset is its files, not where they are mounted: a daemon serving a copy at another
// path serves the same stream (and its state resumes a Loader on the copy); a daemon back
// at its address with other images at the same path (a stale or re-encoded copy) is kept
// out, saying why.
TEST_F(FanInTest, TheSameFilesAtAnotherPathAreOneDatasetAndAMemberBackOnOtherImagesIsKeptOut) {
  testing::HangGuard guard(120, "FanInTest.Identity");
  testing::TempDir copy_dir, other_dir;
  const std::string copy = copy_dir.path() + "/mounted/elsewhere";
  std::filesystem::create_directories(copy_dir.path() + "/mounted");
  std::filesystem::copy(root_, copy, std::filesystem::copy_options::recursive);
  const std::string other = testing::make_image_folder(other_dir.path(), 96, 3, 99, 40, 90);
  const auto serving = [&](const std::string& name, const std::string& root, const std::string& listen) {
    return std::make_unique<testing::DaemonProcess>(
        socket_path(name), std::vector<std::string>{"--max-workers", "1", "--dataset", "train=" + root,
                                                    "--listen", listen, "--token-file", token_});
  };
  auto d0 = start("ident0");
  auto d1 = serving("ident1", copy, "127.0.0.1:0");
  const std::string a1 = testing::remote_address(*d1);
  auto client = connect({testing::remote_address(*d0), a1});
  ASSERT_TRUE(client);
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 5, "a copy at another path");
  LoaderOptions on_copy = options();
  on_copy.image_folder = copy;
  auto resumed = Loader::open(on_copy, client->state());
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  auto here = Loader::open(options(), client->state());
  ASSERT_TRUE(here.ok()) << here.status().message();
  EXPECT_TRUE(testing::read_batches(**resumed, 3) == testing::read_batches(**here, 3))
      << "a state resumed on the copy differs from one resumed where it was taken";

  ASSERT_TRUE(d1->signal_and_wait(SIGKILL, 5s));
  d1.reset();
  for (int i = 0; i < 200 && client->daemons()[1].up; ++i) {
    expect_same(*client, *loader, 1, "until the loss is seen");
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(client->daemons()[1].up) << "the client never saw the killed daemon go";
  std::filesystem::remove_all(copy);
  std::filesystem::copy(other, copy, std::filesystem::copy_options::recursive);
  d1 = serving("ident1b", copy, a1);  // the same port and path, other images under the same names
  const Clock::time_point restarted = Clock::now();
  while (client->daemons()[1].last_error.find("another dataset") == std::string::npos &&
         Clock::now() - restarted < 20s) {
    expect_same(*client, *loader, 1, "while it tries to come back");
    std::this_thread::sleep_for(100ms);
  }
  const RemoteDaemonStats back = client->daemons()[1];
  EXPECT_FALSE(back.up) << "a daemon on other images rejoined";
  EXPECT_NE(back.last_error.find(a1 + " serves another dataset (sizes differ in sample"), std::string::npos)
      << back.last_error;
  expect_same(*client, *loader, 24, "with the other daemon kept out");
}

// The want message, as forkfeedd takes it: a stale generation is ignored, a batch past
// the epoch or a want on a stream not on demand ends the connection with a notice.
TEST_F(FanInTest, ForkfeeddRefusesABadWantWithANoticeAndIgnoresAStaleOne) {
  testing::HangGuard guard(60, "FanInTest.Want");
  auto daemon = start("want");
  for (const bool demand : {true, false}) {
    auto connection = DaemonConnection::connect(daemon->socket());
    ASSERT_TRUE(connection.ok()) << connection.status().message();
    StreamRequest request{StreamOptions{options(), {}}, {}, demand};
    auto opened = connection->request(MessageType::kOpenStream, to_json(request));
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    if (demand) {
      const nlohmann::json stale{{"generation", 99}, {"batches", {0}}};
      ASSERT_TRUE(connection->send(MessageType::kWant, stale).ok());
      ASSERT_TRUE(connection->request(MessageType::kStats, nlohmann::json::object()).ok())
          << "a stale want is ignored, unanswered";
    }
    // Past the epoch's end (24 batches) on demand; any want on a stream not on demand.
    ASSERT_TRUE(
        connection->send(MessageType::kWant, {{"generation", 1}, {"batches", {demand ? 24 : 0}}}).ok());
    const Clock::time_point sent = Clock::now();
    Status s;
    while (s.ok() && Clock::now() - sent < 5s) {
      s = connection->check();
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_FALSE(s.ok()) << "forkfeedd kept a connection that sent a bad want";
    EXPECT_NE(s.message().find(demand ? "past the end of the epoch" : "not opened on demand"),
              std::string::npos)
        << s.message();
  }
}

// Both connections found lost at one call, while one daemon is already back at its
// address (restarted between two calls): it is tried at once, and the pass goes on.
TEST_F(FanInTest, LosingEveryDaemonAtOnceTriesThemBeforeFailing) {
  testing::HangGuard guard(60, "FanInTest.Settle");
  auto d0 = start("settle0");
  auto d1 = start("settle1");
  const std::string a0 = testing::remote_address(*d0);
  auto client = connect({a0, testing::remote_address(*d1)});
  ASSERT_TRUE(client);
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 3, "before");
  ASSERT_TRUE(d0->signal_and_wait(SIGKILL, 5s));
  d0.reset();
  d0 = start("settle0b", a0);
  // Its gateway listens at a0 (so the old one, which dies with its daemon, is gone).
  for (int i = 0; i < 1000 && testing::remote_address(*d0) != a0; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(testing::remote_address(*d0), a0) << testing::daemon_stats(d0->socket()).dump();
  ASSERT_TRUE(d1->signal_and_wait(SIGKILL, 5s));
  expect_same(*client, *loader, 30, "with daemon 0 back and daemon 1 gone");
  EXPECT_TRUE(client->daemons()[0].up);
  EXPECT_EQ(client->daemons()[0].losses, 1u);
}

// Found from outside: a member whose forkfeedd hangs (stopped; its gateway answers) held
// the connect forever, with one daemon or several. It is left out after connect_timeout
// and tried again, as a lost one is: the stream goes on with the others, and the hung one
// rejoins once it goes on; alone, the connect fails saying what it waited for.
TEST_F(FanInTest, AMemberHungAtConnectIsLeftOutAndRejoinsOnceItGoesOn) {
  testing::HangGuard guard(120, "FanInTest.HungAtConnect");
  auto d0 = start("hung0");
  auto d1 = start("hung1");
  const std::string a0 = testing::remote_address(*d0), a1 = testing::remote_address(*d1);
  StreamOptions s = stream();
  s.connect_timeout = 2s;  // the live one opens well within it, even on a loaded machine
  auto hung = std::make_unique<testing::StoppedProcess>(d0->pid());
  // In threads, so that a connect that never returns fails the test (once the daemon goes
  // on) instead of hanging it.
  auto alone = std::async(std::launch::async, [&] { return Client::connect(RemoteDaemon{a0, token_}, s); });
  const bool alone_returned = alone.wait_for(20s) == std::future_status::ready;
  auto both = std::async(std::launch::async, [&] {
    return Client::connect(std::vector<RemoteDaemon>{{a0, token_}, {a1, token_}}, s);
  });
  const bool both_returned = both.wait_for(20s) == std::future_status::ready;
  if (!alone_returned || !both_returned) hung->resume();
  EXPECT_TRUE(alone_returned)
      << "connect to one hung daemon did not return within 20 s (connect_timeout 2 s)";
  EXPECT_TRUE(both_returned) << "connect to a hung daemon and a live one did not return within 20 s";
  auto refused = alone.get();
  ASSERT_FALSE(refused.ok()) << "a hung daemon opened a stream";
  EXPECT_EQ(refused.status().code(), Status::Code::kUnavailable) << refused.status().message();
  EXPECT_NE(refused.status().message().find(a0), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("did not open the stream"), std::string::npos)
      << refused.status().message();
  auto connected = both.get();
  ASSERT_TRUE(connected.ok()) << connected.status().message();
  std::unique_ptr<Client> client = std::move(connected).value();
  EXPECT_FALSE(client->daemons()[0].up) << "the hung daemon was taken in";
  EXPECT_NE(client->daemons()[0].last_error.find(a0), std::string::npos) << client->daemons()[0].last_error;
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 6, "with daemon 0 hung");
  hung->resume();
  for (int i = 0; i < 400 && !client->daemons()[0].up; ++i) {
    expect_same(*client, *loader, 1, "while the hung daemon goes on");
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(client->daemons()[0].up)
      << "the daemon at " << a0 << " did not rejoin once it went on: " << client->daemons()[0].last_error;
  expect_same(*client, *loader, 24, "after it rejoined");
}

// Found from outside: a training step longer than `overdue` made the daemons overdue at
// the next next() ("delivered nothing for ... ms"), and their batches were asked of the
// others again, though they only waited for the trainer (a batch comes while the client
// waits: it progresses the receive). Only time spent waiting counts.
TEST_F(FanInTest, AStepLongerThanOverdueMakesNoDaemonOverdue) {
  testing::HangGuard guard(60, "FanInTest.LongStep");
  auto d0 = start("step0");
  auto d1 = start("step1");
  auto client = connect({testing::remote_address(*d0), testing::remote_address(*d1)}, 0, 1, {}, 500ms);
  ASSERT_TRUE(client);
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 2, "before the steps");  // the daemons' first decodes are behind
  std::vector<RemoteDaemonStats> before = client->daemons();
  testing::Batches got;
  for (int step = 0; step < 5; ++step) {
    got.push_back(testing::read_batches(*client, 1).at(0));
    std::this_thread::sleep_for(800ms);  // the training step
  }
  EXPECT_TRUE(got == testing::read_batches(*loader, 5)) << "the stream with long steps differs";
  const std::vector<RemoteDaemonStats> after = client->daemons();
  for (std::size_t d = 0; d < after.size(); ++d) {
    // (Late copies of batches reassigned while the daemons started may still come.)
    EXPECT_EQ(after[d].reassigned, before[d].reassigned) << after[d].address << " was taken for overdue";
    EXPECT_EQ(after[d].losses, 0u) << after[d].last_error;
  }
}

// Found from outside: when every sample of a pass's last batch was skipped, a remote
// Client counted that batch's skips twice: the end of the pass it makes itself carried
// the skip count of the record before it (its DeliveryRecord was not initialised).
TEST_F(FanInTest, TheSkipsOfAWhollySkippedLastBatchCountOnce) {
  testing::HangGuard guard(60, "FanInTest.SkippedTail");
  testing::TempDir tail_dir;
  const std::string tail = testing::make_image_folder(tail_dir.path(), 8, 1, 31, 40, 70);
  for (const auto& entry : std::filesystem::directory_iterator(tail)) {
    for (int b = 0; b < 2; ++b)
      std::ofstream(entry.path() / ("zz_bad_" + std::to_string(b) + ".jpg")) << "no image\n";
  }
  testing::DaemonProcess daemon(socket_path("tail"), {"--max-workers", "1", "--dataset", "train=" + tail,
                                                      "--listen", "127.0.0.1:0", "--token-file", token_});
  StreamOptions s = stream();
  s.loader.on_error = OnError::kSkip;
  s.loader.shuffle = false;
  s.loader.log_level = "off";
  auto client = Client::connect({RemoteDaemon{testing::remote_address(daemon), token_}}, s);
  ASSERT_TRUE(client.ok()) << client.status().message();
  LoaderOptions local = s.loader;
  local.image_folder = tail;
  auto loader = testing::open_loader(local);
  ASSERT_TRUE(loader);
  for (std::uint64_t epoch = 1; epoch <= 2; ++epoch) {
    EXPECT_TRUE(testing::read_pass(**client) == testing::read_pass(*loader)) << "epoch " << epoch - 1;
    auto stats = (*client)->stats();
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    EXPECT_EQ(stats->skipped_samples, 2 * epoch) << "epoch " << epoch - 1;
    EXPECT_EQ(stats->skipped_samples, loader->stats().skipped_samples);
  }
}

// Found from outside: a Client of one remote daemon that came back on other files was
// told it served another dataset "than the one at" its own address, that its batches
// went "to the other daemons" (there are none), and its final error dropped the reason.
TEST_F(FanInTest, TheOnlyDaemonBackOnOtherFilesIsRefusedSayingWhy) {
  testing::HangGuard guard(60, "FanInTest.OnlyDaemonBack");
  testing::TempDir other_dir;
  const std::string other = testing::make_image_folder(other_dir.path(), 96, 3, 99, 40, 90);
  auto daemon = start("only0");
  const std::string address = testing::remote_address(*daemon);
  auto client = connect({address});
  ASSERT_TRUE(client);
  auto loader = testing::open_loader(options());
  expect_same(*client, *loader, 2, "before the restart");
  ASSERT_TRUE(daemon->signal_and_wait(SIGKILL, 5s));
  daemon.reset();
  daemon = std::make_unique<testing::DaemonProcess>(
      socket_path("only0b"), std::vector<std::string>{"--max-workers", "1", "--dataset", "train=" + other,
                                                      "--listen", address, "--token-file", token_});
  // Its gateway may wait for the port that the killed one's held (a lone daemon is tried
  // once when it is lost, and the reason of that try is what this test is about).
  ASSERT_TRUE(testing::eventually(
      [&] {
        const nlohmann::json stats = testing::daemon_stats(daemon->socket());
        return stats.contains("daemon") &&
               stats["daemon"].value("gateway", nlohmann::json::object()).value("state", std::string()) ==
                   "serving";
      },
      20s))
      << "the restarted daemon's gateway never served";
  Status failed = Status::Ok();
  for (int i = 0; i < 30 && failed.ok(); ++i) {
    auto next = client->next();
    if (!next.ok()) failed = next.status();
  }
  ASSERT_FALSE(failed.ok()) << "a daemon on other images served the stream";
  const std::string& why = failed.message();
  EXPECT_NE(why.find("tried again: the remote forkfeedd at " + address +
                     " serves another dataset (sizes differ in sample"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("than it served when the stream opened"), std::string::npos) << why;
  EXPECT_EQ(why.find("than the one at"), std::string::npos) << why;
}

}  // namespace
}  // namespace forkfeed
