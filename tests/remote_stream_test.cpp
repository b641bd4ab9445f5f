// forkfeedd serving other machines (forkfeed-gateway over UCX), tested over loopback
// TCP (UCX_TLS=tcp, set before anything loads UCX): a remote stream is the local
// Loader's stream, bytes and all, over epochs and ranks; states move between remote and
// local; a wrong token and a path are refused; the daemon's death and a stopped gateway
// reach a waiting client within 3 s; a killed remote client frees its stream; garbage
// sent to the listener harms no other stream; no process with UCX loaded starts a child;
// and the fork report names UCX once it is loaded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

#include "client/daemon_connection.h"
#include "client/remote/remote_link.h"
#include "forkfeed/client.h"
#include "forkfeed/fork_safety.h"
#include "protocol/frame.h"
#include "protocol/stream_request.h"
#include "remote/net_address.h"
#include "remote/ucx.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

extern char** environ;

namespace forkfeed {
namespace {

using testing::daemon_stats;
using testing::gateway_of;
using testing::remote_address;

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr const char* kToken = "s3cret-token-of-this-suite";

class RemoteStreamTest : public testing::DaemonSuite<RemoteStreamTest> {
 protected:
  static void SetUpTestSuite() {
    // Before any UCX context, here or in the daemon's gateway: the network path, not
    // shared memory between two processes of one host.
    ::setenv("UCX_TLS", "tcp", 1);
    ::setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    make_dataset(48, 3, 17, 40, 90);
    token_ = dir_->path() + "/token";
    std::ofstream(token_) << kToken << "\n";
    ::chmod(token_.c_str(), 0600);
  }

  // A daemon serving the suite's dataset as "train" to remote clients on a free port.
  static std::vector<std::string> remote_args() {
    return {"--max-workers", "2",           "--dataset",    "train=" + root_,
            "--listen",      "127.0.0.1:0", "--token-file", token_};
  }

  static LoaderOptions options(std::uint32_t rank = 0, std::uint32_t world = 1) {
    LoaderOptions o = stream_options(2, 4);
    o.rank = rank;
    o.world_size = world;
    o.seed = 11;
    return o;
  }

  static StreamOptions remote_options(std::uint32_t rank = 0, std::uint32_t world = 1) {
    StreamOptions s;
    s.loader = options(rank, world);
    s.loader.image_folder.clear();
    s.dataset = "train";
    return s;
  }

  // A remote Client of the daemon at `address`, or null (and a failure) if it cannot open.
  static std::unique_ptr<Client> connect(const std::string& address, const StreamOptions& options,
                                         std::string_view state = {}) {
    auto client = Client::connect(RemoteDaemon{address, token_}, options, state);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  static inline std::string token_;
};

std::uint64_t open_streams(const testing::DaemonProcess& daemon) {
  const json stats = daemon_stats(daemon.socket());
  return stats.contains("daemon") ? stats["daemon"]["streams"].get<std::uint64_t>() : ~std::uint64_t{0};
}

bool maps_ucx(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("libucp.so") != std::string::npos) return true;
  }
  return false;
}

// SIGUSR1, while in scope, freezes the thread it is sent to for `kFrozen` (in its
// handler, as a debugger or a VM pause would freeze it), then sets `thawed`.
class ThreadFreezer {
 public:
  static constexpr std::chrono::seconds kFrozen{4};
  ThreadFreezer() {
    thawed.store(false);
    struct sigaction action {};
    action.sa_handler = freeze;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGUSR1, &action, &before_);  // no SA_RESTART: the poll it cuts returns EINTR
  }
  ~ThreadFreezer() { ::sigaction(SIGUSR1, &before_, nullptr); }
  ThreadFreezer(const ThreadFreezer&) = delete;
  ThreadFreezer& operator=(const ThreadFreezer&) = delete;

  static inline std::atomic<bool> thawed{false};

 private:
  static void freeze(int) {
    const int saved = errno;
    timespec left{kFrozen.count(), 0};
    while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    thawed.store(true);
    errno = saved;
  }
  struct sigaction before_ {};
};

TEST_F(RemoteStreamTest, ARemoteStreamIsTheLocalLoadersOverTwoEpochsAndTwoRanks) {
  testing::HangGuard guard(120, "RemoteStreamTest.Equals");
  testing::DaemonProcess daemon(socket_path("equal"), remote_args());
  const std::string address = remote_address(daemon);
  ASSERT_FALSE(address.empty());
  for (std::uint32_t rank = 0; rank < 2; ++rank) {
    auto remote = connect(address, remote_options(rank, 2));
    ASSERT_TRUE(remote);
    auto local = testing::open_loader(options(rank, 2));
    for (int epoch = 0; epoch < 2; ++epoch) {
      const testing::Batches got = testing::read_pass(*remote);
      const testing::Batches want = testing::read_pass(*local);
      ASSERT_EQ(got.size(), 6u) << "rank " << rank << " epoch " << epoch;
      EXPECT_TRUE(got == want)
          << "rank " << rank << " epoch " << epoch
          << ": the remote stream differs from the local Loader's (indices, labels or pixels)";
    }
    EXPECT_EQ(remote->state(), local->state());
  }
}

TEST_F(RemoteStreamTest, AStateMovesFromRemoteToLocalAndBackExactly) {
  testing::HangGuard guard(120, "RemoteStreamTest.Resume");
  testing::DaemonProcess daemon(socket_path("resume"), remote_args());
  const std::string address = remote_address(daemon);
  const testing::Batches whole = testing::read_pass(*testing::open_loader(options()));
  ASSERT_EQ(whole.size(), 12u);

  testing::Batches seen;
  std::string state;
  {
    auto remote = connect(address, remote_options());
    ASSERT_TRUE(remote);
    const testing::Batches part = testing::read_batches(*remote, 3);  // prefetch runs ahead of these
    seen.insert(seen.end(), part.begin(), part.end());
    state = remote->state();
  }
  {
    auto local = Loader::open(options(), state);
    ASSERT_TRUE(local.ok()) << local.status().message();
    const testing::Batches part = testing::read_batches(**local, 4);
    seen.insert(seen.end(), part.begin(), part.end());
    state = (*local)->state();
  }
  auto remote = connect(address, remote_options(), state);
  ASSERT_TRUE(remote);
  const testing::Batches rest = testing::read_pass(*remote);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_TRUE(seen == whole) << "remote -> local -> remote did not give the undisturbed pass (" << seen.size()
                             << " batches)";
}

// The network path holds a batch's slots while it crosses (the daemon's while it is sent,
// a receive slot from its credit on): the gateway opens the daemon's stream with two
// slots more than the options make, and the client's receive slots follow. A trainer
// with one worker (prefetch 2: 3 slots locally) holds five batches; the sixth comes once
// the oldest is copied aside, as every slot is held.
TEST_F(RemoteStreamTest, ARemoteStreamHasTwoSlotsMoreForItsTransfers) {
  testing::HangGuard guard(60, "RemoteStreamTest.TransitSlots");
  testing::DaemonProcess daemon(socket_path("transit"), remote_args());
  StreamOptions o = remote_options();
  o.loader.workers = 1;
  auto remote = connect(remote_address(daemon), o);
  ASSERT_TRUE(remote);
  std::vector<Batch> held;
  for (int i = 0; i < 5; ++i) {
    auto batch = remote->next();
    ASSERT_TRUE(batch.ok()) << "batch " << i << ": " << batch.status().message();
    ASSERT_TRUE(batch->has_value());
    held.push_back(std::move(**batch));
  }
  ASSERT_EQ(remote->stats()->copied_batches, 0u) << "five batches held: 3 + 2 slots";
  const testing::BatchRecord oldest(held[0]);
  auto sixth = remote->next();
  ASSERT_TRUE(sixth.ok() && sixth->has_value()) << (sixth.ok() ? "end of pass" : sixth.status().message());
  EXPECT_EQ(remote->stats()->copied_batches, 1u) << "a sixth batch held: more than 3 + 2 slots";
  EXPECT_TRUE(testing::BatchRecord(held[0]) == oldest) << "the copy is the batch as it was";
  held.pop_back();
  auto again = remote->next();
  EXPECT_TRUE(again.ok() && again->has_value()) << "a slot given back is a batch again";
}

// Batches move while the trainer computes: the link's own thread progresses UCX, so the
// rendezvous of every batch its credits allow completes with no call into the link (a
// trainer's step), not only while it waits in next().
TEST_F(RemoteStreamTest, BatchesArriveWhileNobodyCallsTheLink) {
  testing::HangGuard guard(60, "RemoteStreamTest.Background");
  testing::DaemonProcess daemon(socket_path("background"), remote_args());
  json opened;
  auto link = RemoteLink::open(RemoteDaemon{remote_address(daemon), token_}, std::chrono::seconds(10), -1,
                               to_json(StreamRequest{.stream = remote_options(), .state = {}}), opened);
  ASSERT_TRUE(link.ok()) << link.status().message();
  const std::uint32_t slots = (*link)->slots();
  ASSERT_GT(slots, 1u);
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while ((*link)->arrived() < slots && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ((*link)->arrived(), slots)
      << "batches in after 10 s of no calls, of the " << slots << " its credits allow";
}

// A sender's UCX messages are as large as its own tcp receive segment, and UCX aborts a
// receiver whose segment is smaller: the gateway keeps UCX's default, so a trainer at
// that default (any forkfeed version, any UCX user) reads from it. With the gateway's
// segment at 512 KB this process aborted on its first batch.
// The transit slots are the gateway's to give, never a reason to refuse: a stream whose
// own slots fit the daemon's memory but not two more opens as asked.
TEST_F(RemoteStreamTest, AStreamWhoseTransitSlotsDoNotFitOpensAsAsked) {
  testing::HangGuard guard(60, "RemoteStreamTest.TransitFit");
  std::vector<std::string> args = remote_args();
  args.insert(args.end(), {"--max-stream-arena-bytes", "14M"});  // 5 slots of 2.4 MB fit, 7 do not
  testing::DaemonProcess daemon(socket_path("transitfit"), args);
  StreamOptions o = remote_options();
  o.loader.size = 224;
  o.loader.batch_size = 16;
  auto remote = connect(remote_address(daemon), o);
  ASSERT_TRUE(remote);
  auto batch = remote->next();
  EXPECT_TRUE(batch.ok() && batch->has_value()) << (batch.ok() ? "" : batch.status().message());
}

TEST_F(RemoteStreamTest, ATrainerAtUcxsDefaultSegmentReadsFromTheGateway) {
  testing::HangGuard guard(60, "RemoteStreamTest.Segment");
  testing::DaemonProcess daemon(socket_path("segment"), remote_args());  // the gateway's env: no segment set
  ::setenv("UCX_TCP_RX_SEG_SIZE", "64K", 1);                             // this trainer's, from here on
  StreamOptions large = remote_options();
  large.loader.size = 224;  // batches of 2.4 MB: many segments
  large.loader.batch_size = 16;
  auto remote = connect(remote_address(daemon), large);
  ::unsetenv("UCX_TCP_RX_SEG_SIZE");
  ASSERT_TRUE(remote);
  LoaderOptions local = options();
  local.size = 224;
  local.batch_size = 16;
  const testing::Batches got = testing::read_pass(*remote);
  EXPECT_TRUE(got == testing::read_pass(*testing::open_loader(local)));
}

TEST_F(RemoteStreamTest, AWrongTokenAndAPathAreRefusedWithReasons) {
  testing::HangGuard guard(60, "RemoteStreamTest.Refused");
  testing::DaemonProcess daemon(socket_path("refuse"), remote_args());
  const std::string address = remote_address(daemon);
  const std::string wrong = dir_->path() + "/wrong-token";
  std::ofstream(wrong) << "a-wrong-guess-of-the-token\n";
  ASSERT_EQ(::chmod(wrong.c_str(), 0600), 0);
  auto refused = Client::connect(RemoteDaemon{address, wrong}, remote_options());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("refused the token"), std::string::npos)
      << refused.status().message();
  // The client's copy is a secret too: one that others may read is refused before use.
  const std::string readable = dir_->path() + "/readable-token";
  std::ofstream(readable) << kToken << "\n";
  ASSERT_EQ(::chmod(readable.c_str(), 0644), 0);
  auto exposed = Client::connect(RemoteDaemon{address, readable}, remote_options());
  ASSERT_FALSE(exposed.ok());
  EXPECT_NE(exposed.status().message().find("has mode 0644"), std::string::npos)
      << exposed.status().message();
  EXPECT_NE(exposed.status().message().find("chmod 600 " + readable), std::string::npos)
      << exposed.status().message();

  StreamOptions path = remote_options();
  path.loader.image_folder = root_;  // a name and a path: the gateway takes no path
  auto with_path = Client::connect(RemoteDaemon{address, token_}, path);
  ASSERT_FALSE(with_path.ok());
  EXPECT_NE(with_path.status().message().find("never a path"), std::string::npos)
      << with_path.status().message();

  StreamOptions no_name = remote_options();
  no_name.dataset.clear();
  no_name.loader.image_folder = root_;
  auto unnamed = Client::connect(RemoteDaemon{address, token_}, no_name);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_NE(unnamed.status().message().find("named"), std::string::npos) << unnamed.status().message();

  StreamOptions unknown = remote_options();
  unknown.dataset = "nope";
  auto missing = Client::connect(RemoteDaemon{address, token_}, unknown);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no dataset named 'nope'"), std::string::npos)
      << missing.status().message();
  EXPECT_EQ(open_streams(daemon), 0u);
  // The gateway still serves.
  auto fine = connect(address, remote_options());
  ASSERT_TRUE(fine);
  EXPECT_EQ(testing::read_pass(*fine).size(), 12u);
}

TEST_F(RemoteStreamTest, TheDaemonKilledWhileAClientWaitsIsAnErrorWithin3Seconds) {
  testing::HangGuard guard(60, "RemoteStreamTest.DaemonKilled");
  testing::DaemonProcess daemon(socket_path("kill"), remote_args());
  auto remote = connect(remote_address(daemon), remote_options());
  ASSERT_TRUE(remote);
  ASSERT_EQ(testing::read_batches(*remote, 2).size(), 2u);
  ASSERT_TRUE(daemon.signal_and_wait(SIGKILL, std::chrono::seconds(5)));
  const Clock::time_point killed = Clock::now();
  Status failed;
  while (failed.ok() && Clock::now() - killed < std::chrono::seconds(10)) {  // what arrived, then the wait
    auto b = remote->next();
    if (!b.ok()) failed = b.status();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - killed).count();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), Status::Code::kUnavailable) << failed.message();
  // Whichever the client hears first: the gateway's word that its daemon went, or the
  // gateway itself going (it dies with its daemon).
  EXPECT_NE(failed.message().find("remote forkfeedd at"), std::string::npos) << failed.message();
  EXPECT_LT(waited, 3.3 + 0.3) << failed.message();
  EXPECT_FALSE(remote->next().ok()) << "the error stays";
}

TEST_F(RemoteStreamTest, AStoppedGatewayIsTakenForLostWithin3Seconds) {
  testing::HangGuard guard(60, "RemoteStreamTest.Stopped");
  testing::DaemonProcess daemon(socket_path("stop"), remote_args());
  auto remote = connect(remote_address(daemon), remote_options());
  ASSERT_TRUE(remote);
  const pid_t gateway = gateway_of(daemon.pid());
  ASSERT_GT(gateway, 0);
  ASSERT_EQ(testing::read_batches(*remote, 1).size(), 1u);
  ASSERT_EQ(::kill(gateway, SIGSTOP), 0);
  Status failed;
  Clock::time_point started = Clock::now();
  for (int i = 0; i < 1000 && failed.ok(); ++i) {
    started = Clock::now();  // the wait that fails is the one that found nothing arrived
    auto b = remote->next();
    if (!b.ok()) failed = b.status();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - started).count();
  ::kill(gateway, SIGCONT);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("no word from it"), std::string::npos) << failed.message();
  EXPECT_GE(waited, 2.5);
  EXPECT_LT(waited, 4.5);  // 3 s of silence, and a loaded machine's wake-up
}

// Found from outside: a trainer frozen for 3 s or more inside next() (Ctrl-Z, a debugger,
// a VM pause, a long GC) was told its healthy daemon was lost ("no word from it"), though
// the gateway's beats were waiting in its socket. What came is read before silence is
// judged, and only time in which the client could hear counts.
TEST_F(RemoteStreamTest, ATrainerFrozenInsideNextIsNotToldItsDaemonIsLost) {
  testing::HangGuard guard(60, "RemoteStreamTest.Paused");
  testing::DaemonProcess daemon(socket_path("pause"), remote_args());
  auto remote = connect(remote_address(daemon), remote_options());
  ASSERT_TRUE(remote);
  ASSERT_EQ(testing::read_batches(*remote, 1).size(), 1u);
  ThreadFreezer freezer;
  // Its forkfeedd stopped, the stream has nothing more to give: the trainer's next()
  // waits (its gateway beats), and is frozen there.
  auto stopped = std::make_unique<testing::StoppedProcess>(daemon.pid());
  std::atomic<int> calls{0};  // odd while in next()
  Status failed;
  std::thread trainer([&] {
    while (true) {
      calls.fetch_add(1);
      auto next = remote->next();
      calls.fetch_add(1);
      if (!next.ok()) failed = next.status();
      if (!next.ok() || ThreadFreezer::thawed.load()) return;
    }
  });
  // In next(), and there for half a second: waiting.
  int seen = -1;
  Clock::time_point since = Clock::now();
  while (Clock::now() - since < std::chrono::milliseconds(500)) {
    const int now = calls.load();
    if (now != seen || now % 2 == 0) {
      seen = now;
      since = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(::pthread_kill(trainer.native_handle(), SIGUSR1), 0);
  EXPECT_TRUE(testing::eventually([] { return ThreadFreezer::thawed.load(); }, std::chrono::seconds(20)));
  stopped->resume();  // the next batch comes once it goes on
  trainer.join();
  EXPECT_TRUE(failed.ok()) << "frozen " << ThreadFreezer::kFrozen.count()
                           << " s inside next(): " << failed.message();
  EXPECT_EQ(testing::read_batches(*remote, 5).size(), 5u) << "the stream goes on";
}

// Found from outside: a remote Client opened in a fork's child (its parent had loaded UCX
// for one of its own) waited for connect_timeout and blamed UCX_TLS. UCX belongs to the
// process that loaded it: the child is told so at once.
TEST_F(RemoteStreamTest, ARemoteClientOpenedInAForksChildIsRefusedAtOnceSayingWhy) {
  testing::HangGuard guard(60, "RemoteStreamTest.ForkedChild");
  testing::DaemonProcess daemon(socket_path("forked"), remote_args());
  const std::string address = remote_address(daemon);
  auto parents = connect(address, remote_options());  // UCX is loaded here
  ASSERT_TRUE(parents);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StreamOptions o = remote_options();
    o.connect_timeout = std::chrono::seconds(5);
    auto remote = Client::connect(RemoteDaemon{address, token_}, o);
    const std::string message = remote.ok() ? "it opened" : remote.status().message();
    std::fprintf(stderr, "the child's connect: %s\n", message.c_str());
    const bool told = !remote.ok() && remote.status().code() == Status::Code::kFailedPrecondition &&
                      message.find("forked") != std::string::npos &&
                      message.find("UCX_TLS") == std::string::npos;
    ::_exit(told ? 0 : 1);
  }
  int status = 0;
  const bool exited = testing::eventually([&] { return ::waitpid(child, &status, WNOHANG) == child; },
                                          std::chrono::seconds(30));
  if (!exited) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  EXPECT_TRUE(exited) << "the child's connect did not return within 30 s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child was not refused at once for its inherited UCX (its stderr says what it got)";
  EXPECT_EQ(testing::read_pass(*parents).size(), 12u) << "the parent's stream goes on";
}

// Found from outside: a trainer holding a remote batch forks (a DataLoader of its own, a
// checkpoint writer). The child must keep the batch as it was at the fork while the parent
// reads on and its receive slots are written again. UCX hooks mremap() without its fifth
// argument, so the copy that the fork handler moved into place went elsewhere: a child
// that read a large batch crashed, a small one showed whatever the slot held next.
TEST_F(RemoteStreamTest, AForksChildKeepsTheRemoteBatchItsParentHeld) {
  testing::HangGuard guard(90, "RemoteStreamTest.ForkHoldingABatch");
  testing::DaemonProcess daemon(socket_path("fork-held"), remote_args());
  StreamOptions o = remote_options();
  o.loader.size = 112;  // 16 x 112 x 112 x 3: 602 KB a batch, 147 pages
  o.loader.batch_size = 16;
  auto remote = connect(remote_address(daemon), o);
  ASSERT_TRUE(remote);
  for (int round = 0; round < 2; ++round) {  // a small batch too: 4 x 16 x 16 x 3
    if (round == 1) {
      o.loader.size = 16;
      o.loader.batch_size = 4;
      remote = connect(remote_address(daemon), o);
      ASSERT_TRUE(remote);
    }
    auto next = remote->next();
    ASSERT_TRUE(next.ok() && next.value()) << (next.ok() ? "the pass is empty" : next.status().message());
    std::optional<Batch> held = std::move(next).value();
    const Batch& batch = *held;
    const auto* bytes = static_cast<const std::uint8_t*>(batch.data());
    const std::vector<std::uint8_t> expected(bytes, bytes + batch.bytes());
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      char byte;
      const bool told = ::read(go[0], &byte, 1) == 1;
      ::_exit(told && std::memcmp(bytes, expected.data(), expected.size()) == 0 ? 0 : 1);
    }
    ::close(go[0]);
    held.reset();  // let go: its slot is written again
    EXPECT_EQ(testing::read_batches(*remote, 8).size(), 8u) << "round " << round;
    EXPECT_EQ(::write(go[1], "x", 1), 1);
    ::close(go[1]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "round " << round << ": the child "
        << (WIFSIGNALED(status) ? "was killed by a signal" : "saw other bytes") << " (status " << status
        << ")";
  }
}

TEST_F(RemoteStreamTest, AKilledRemoteClientFreesItsStream) {
  testing::HangGuard guard(60, "RemoteStreamTest.ClientKilled");
  testing::DaemonProcess daemon(socket_path("client"), remote_args());
  const std::string address = remote_address(daemon);
  // A trainer of its own (forkfeed-bench, reading slowly forever): this process has UCX
  // loaded and must not fork one.
  const std::string bench = std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench";
  std::vector<std::string> args = {bench,          "--remote", address,   "--dataset",   "train",
                                   "--token-file", token_,     "--batch", "4",           "--size",
                                   "16",           "--epochs", "1000",    "--log-level", "error"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t trainer = -1;
  ASSERT_EQ(::posix_spawn(&trainer, bench.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  ASSERT_TRUE(testing::eventually([&] { return open_streams(daemon) == 1; }, std::chrono::seconds(20)))
      << "the remote trainer's stream did not open";
  ::kill(trainer, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(trainer, &status, 0), trainer);
  const Clock::time_point killed = Clock::now();
  EXPECT_TRUE(testing::eventually([&] { return open_streams(daemon) == 0; }, std::chrono::seconds(3)))
      << "the killed remote client's stream is still open";
  std::printf("remote stream freed %.0f ms after its client was killed\n",
              std::chrono::duration<double, std::milli>(Clock::now() - killed).count());
}

// A frame's bytes as a peer would send them, its header's fields free to be wrong.
std::string frame_bytes(std::uint16_t type, const std::string& payload, std::uint32_t magic = kFrameMagic,
                        std::uint32_t length = ~0u) {
  const FrameHeader header{magic, kProtocolVersion, type,
                           length == ~0u ? static_cast<std::uint32_t>(payload.size()) : length, 0};
  return std::string(reinterpret_cast<const char*>(&header), sizeof header) + payload;
}

std::string hello(const std::string& token, const std::string& worker = "") {
  json body = {{"protocol", kProtocolVersion}, {"token", token}};
  if (!worker.empty()) body["worker"] = worker;
  return frame_bytes(static_cast<std::uint16_t>(MessageType::kHello), body.dump());
}

TEST_F(RemoteStreamTest, FiftyGarbageMessagesHarmNoOtherStream) {
  testing::HangGuard guard(180, "RemoteStreamTest.Garbage");
  testing::DaemonProcess daemon(socket_path("garbage"), remote_args());
  const std::string address = remote_address(daemon);
  auto victim = connect(address, remote_options());
  ASSERT_TRUE(victim);
  const testing::Batches first = testing::read_batches(*victim, 2);

  const auto open = static_cast<std::uint16_t>(MessageType::kOpenStream);
  const auto credit = static_cast<std::uint16_t>(MessageType::kCredit);
  const std::string token = kToken;
  // Each is one connection's whole conversation: not forkfeed at all, cut short, lying
  // about its length, before the hello, a wrong token (with a garbage worker address,
  // which UCX must never see: it asserts on one), a hello without a worker address,
  // credits from nobody.
  const std::vector<std::string> conversations = {
      "GET / HTTP/1.0\r\n\r\n",
      std::string(4096, '\xff'),
      std::string(3, 'x'),
      "",
      frame_bytes(open, R"({"dataset":"train"})").substr(0, 20),
      frame_bytes(open, "{}", 0xdeadbeef),
      frame_bytes(open, "{}", kFrameMagic, 1u << 30),
      frame_bytes(open, R"({"dataset":"train"})"),
      frame_bytes(credit, R"({"count":3})"),
      hello("guess"),
      hello(token),
      hello("guess", "not a UCX worker address"),
      frame_bytes(static_cast<std::uint16_t>(MessageType::kHello), "not json"),
      frame_bytes(static_cast<std::uint16_t>(MessageType::kHello), R"({"token": 7})"),
      frame_bytes(42, "{}"),
  };
  sockaddr_storage where = *parse_net_address(address, "address");
  for (int i = 0; i < 50; ++i) {
    const std::string& junk = conversations[static_cast<std::size_t>(i) % conversations.size()];
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&where), sizeof(sockaddr_in)), 0);
    (void)!::write(fd.get(), junk.data(), junk.size());
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // some linger, some vanish
  }
  // The victim goes on, exactly.
  const testing::Batches rest = testing::read_pass(*victim);
  testing::Batches pass = first;
  pass.insert(pass.end(), rest.begin(), rest.end());
  EXPECT_TRUE(pass == testing::read_pass(*testing::open_loader(options())))
      << "the stream beside the garbage changed (" << pass.size() << " batches)";
  EXPECT_TRUE(testing::eventually([&] { return open_streams(daemon) == 1; }, std::chrono::seconds(5)))
      << "garbage left streams open";
  EXPECT_GT(gateway_of(daemon.pid()), 0) << "the gateway is gone";
}

// A connection from `source` (a loopback address) to `address` that has sent a hello
// with `token` (and no worker address: a wrong token is refused before it is looked at).
// A daemon whose (and whose gateway's) info log goes to a file: they log to the stdout
// they inherit.
struct LoggedDaemon {
  LoggedDaemon(const std::string& socket, std::vector<std::string> args)
      : log(logs.path() + "/forkfeedd.log") {
    args.insert(args.end(), {"--log-level", "info"});
    std::fflush(stdout);
    UniqueFd file(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    UniqueFd saved(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
    EXPECT_TRUE(file.valid() && saved.valid());
    ::dup2(file.get(), STDOUT_FILENO);
    daemon.emplace(socket, args);
    ::dup2(saved.get(), STDOUT_FILENO);
  }
  std::string text() const {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  testing::TempDir logs;
  const std::string log;
  std::optional<testing::DaemonProcess> daemon;
};

UniqueFd hello_from(const std::string& source, const std::string& address, const std::string& token) {
  auto where = parse_net_address(address, "address");
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  EXPECT_EQ(::inet_pton(AF_INET, source.c_str(), &from.sin_addr), 1);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&from), sizeof from), 0)
      << std::strerror(errno);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*where), sizeof(sockaddr_in)), 0);
  const std::string bytes = hello(token);
  EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

// Waits for the reply to the hello on `fd` (beats skipped); its body.
json hello_reply(int fd) {
  while (true) {
    auto frame = recv_frame(fd, false);
    if (!frame.ok()) return json{{"lost", frame.status().message()}};
    if (frame->type == static_cast<std::uint16_t>(MessageType::kReply)) return json::parse(frame->payload);
  }
}

// Found from outside: hellos were not rate-limited, so a token could be guessed as fast
// as connections open. Wrong tokens from one address slow down that address's next
// checks (0.5 s, then 1 s, 2 s ... at most 5 s), however many connections it opens at
// once; another address is not held up, and a right token is still served.
TEST_F(RemoteStreamTest, WrongTokensFromOneAddressSlowItsNextHellosOnly) {
  testing::HangGuard guard(120, "RemoteStreamTest.Throttle");
  testing::DaemonProcess daemon(socket_path("throttle"), remote_args());
  const std::string address = remote_address(daemon);
  ASSERT_FALSE(address.empty());
  // Three guesses at once, on three connections: answered one per back-off step, the
  // last no sooner than 0.5 + 1 s after the first (a lower bound: load only delays).
  const Clock::time_point sent = Clock::now();
  std::vector<UniqueFd> guesses;
  for (int i = 0; i < 3; ++i)
    guesses.push_back(hello_from("127.0.0.1", address, "guess-" + std::to_string(i)));
  for (const UniqueFd& fd : guesses) {
    const json reply = hello_reply(fd.get());
    EXPECT_NE(reply.dump().find("refused the token"), std::string::npos) << reply.dump();
  }
  const double answered = std::chrono::duration<double>(Clock::now() - sent).count();
  EXPECT_GE(answered, 1.45) << "three wrong tokens from one address were all answered within " << answered
                            << " s";

  // The guesser's next hello waits 2 s; one from another address is answered before it.
  UniqueFd held = hello_from("127.0.0.1", address, "guess-3");
  UniqueFd elsewhere = hello_from("127.0.0.2", address, "a guess from elsewhere");
  pollfd both[2] = {{held.get(), POLLIN, 0}, {elsewhere.get(), POLLIN, 0}};
  ASSERT_EQ(::poll(both, 2, 10000), 1) << "not exactly one of the two answered first";
  EXPECT_NE(both[1].revents, 0) << "another address waited for the guesser's turn";
  EXPECT_NE(hello_reply(elsewhere.get()).dump().find("refused the token"), std::string::npos);
  held.reset();  // gone before its turn: never checked

  // Found from outside: the right token from the guessing address, with a connect_timeout
  // shorter than its wait, was told the gateway was "stopped or hung". It is told of the
  // wait (the guesser's next check is about 2 s after its third answer).
  StreamOptions impatient = remote_options();
  impatient.connect_timeout = std::chrono::milliseconds(300);
  auto early = Client::connect(RemoteDaemon{address, token_}, impatient);
  if (std::chrono::duration<double>(Clock::now() - sent).count() < answered + 1.5) {
    ASSERT_FALSE(early.ok()) << "served before the guessing address's turn";
  }
  if (!early.ok()) {
    EXPECT_NE(early.status().message().find(
                  "wrong tokens from this address answers its next hellos up to 5 s late"),
              std::string::npos)
        << early.status().message();
  }

  // The right token from the guessing address: served, in its turn.
  auto client = connect(address, remote_options());
  ASSERT_TRUE(client);
  EXPECT_EQ(testing::read_pass(*client).size(), 12u);
}

// Found from outside: each remote client that closed its stream as it should made the
// gateway log that it had lost forkfeedd ("the daemon closed it (stopped or crashed);
// restart the daemon"): forkfeedd ending a stream it was asked to close is no loss.
TEST_F(RemoteStreamTest, AClosedStreamIsNotLoggedAsALostDaemon) {
  testing::HangGuard guard(60, "RemoteStreamTest.QuietClose");
  LoggedDaemon logged(socket_path("quiet"), remote_args());
  const std::string address = remote_address(*logged.daemon);
  for (int i = 0; i < 3; ++i) {
    auto client = connect(address, remote_options());
    ASSERT_TRUE(client);
    ASSERT_EQ(testing::read_batches(*client, 3).size(), 3u);
  }
  const auto text = [&] { return logged.text(); };
  const auto closed = [&] {
    const std::string t = text();
    std::size_t n = 0;
    for (std::size_t at = t.find("stream closed"); at != std::string::npos;
         at = t.find("stream closed", at + 1))
      ++n;
    return n;
  };
  EXPECT_TRUE(testing::eventually([&] { return closed() >= 3; }, std::chrono::seconds(20))) << text();
  EXPECT_EQ(text().find("lost the connection"), std::string::npos) << text();
}

// UCX's tcp transport sends in fragments as large as the sender's receive segment and
// aborts a receiver whose segment is smaller (remote/ucx.h). A trainer says in its hello
// what it receives in: one at forkfeed's large segment is sent in it, one at UCX's
// default in that, each reading the same batches.
TEST_F(RemoteStreamTest, ATrainerIsSentInTheSegmentItReceivesIn) {
  testing::HangGuard guard(90, "RemoteStreamTest.SegmentChosen");
  LoggedDaemon logged(socket_path("segments"), remote_args());
  StreamOptions o = remote_options();
  o.loader.size = 224;  // batches of 2.4 MB: many segments
  o.loader.batch_size = 16;
  LoaderOptions local = options();
  local.size = 224;
  local.batch_size = 16;
  const testing::Batches expected = testing::read_pass(*testing::open_loader(local));
  for (const char* segment : {"", "64K"}) {
    if (*segment != '\0') ::setenv("UCX_TCP_RX_SEG_SIZE", segment, 1);
    auto remote = connect(remote_address(*logged.daemon), o);
    ::unsetenv("UCX_TCP_RX_SEG_SIZE");
    ASSERT_TRUE(remote);
    EXPECT_TRUE(testing::read_pass(*remote) == expected) << "UCX_TCP_RX_SEG_SIZE=" << segment;
  }
  const auto opened_in = [&](const std::string& kib) {
    return logged.text().find("over tcp in segments of " + kib + " KiB") != std::string::npos;
  };
  EXPECT_TRUE(
      testing::eventually([&] { return opened_in("512") && opened_in("64"); }, std::chrono::seconds(10)))
      << logged.text();
}

// Found from outside: a trainer whose segment was smaller than the gateway's
// (UCX_TCP_RX_SEG_SIZE set for forkfeedd only) was aborted by UCX at its first batch. It
// is refused, told what to set; a trainer of a larger one is served.
TEST_F(RemoteStreamTest, ATrainerOfASmallerSegmentThanTheGatewaysIsToldWhatToSet) {
  testing::HangGuard guard(60, "RemoteStreamTest.SegmentRefused");
  ::setenv("UCX_TCP_RX_SEG_SIZE", "128K", 1);  // forkfeedd's, and so its gateway's
  testing::DaemonProcess daemon(socket_path("smaller"), remote_args());
  ::setenv("UCX_TCP_RX_SEG_SIZE", "64K", 1);  // this trainer's
  StreamOptions o = remote_options();
  o.loader.size = 224;
  o.loader.batch_size = 16;
  auto refused = Client::connect(RemoteDaemon{remote_address(daemon), token_}, o);
  ::unsetenv("UCX_TCP_RX_SEG_SIZE");
  ASSERT_FALSE(refused.ok()) << "a trainer at 64K was served by a gateway sending 128K segments";
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition) << refused.status().message();
  EXPECT_NE(refused.status().message().find("UCX_TCP_RX_SEG_SIZE=128K or more for the trainer"),
            std::string::npos)
      << refused.status().message();
  auto served = connect(remote_address(daemon), o);  // forkfeed's 512K
  ASSERT_TRUE(served);
  EXPECT_EQ(testing::read_pass(*served).size(), 3u);
}

// The gateway knows the segment UCX gives it however UCX was told: a size written
// loosely ("1mbytes", which UCX reads as 1M), or a ucx.conf. A gateway that missed
// either sent in fragments its trainer could not receive, and UCX aborted the trainer.
TEST_F(RemoteStreamTest, TheGatewayKnowsTheSegmentUcxsOwnConfigurationGaveIt) {
  testing::HangGuard guard(90, "RemoteStreamTest.SegmentConfigured");
  const std::string conf_dir = dir_->path() + "/ucx-conf";
  ASSERT_EQ(::mkdir(conf_dir.c_str(), 0700), 0);
  std::ofstream(conf_dir + "/ucx.conf") << "UCX_TCP_RX_SEG_SIZE=1M\n";
  struct Case {
    const char* name;
    const char* variable;
    std::string value;
  };
  for (const Case& c :
       {Case{"loose", "UCX_TCP_RX_SEG_SIZE", "1mbytes"}, Case{"conf", "UCX_CONFIG_DIR", conf_dir}}) {
    ::setenv(c.variable, c.value.c_str(), 1);  // forkfeedd's, and so its gateway's
    testing::DaemonProcess daemon(socket_path(c.name), remote_args());
    ::unsetenv(c.variable);
    StreamOptions o = remote_options();
    o.loader.size = 224;
    o.loader.batch_size = 16;
    auto refused = Client::connect(RemoteDaemon{remote_address(daemon), token_}, o);  // forkfeed's 512K
    ASSERT_FALSE(refused.ok()) << c.name << ": a trainer at 512K was served by a gateway sending 1M segments";
    EXPECT_NE(refused.status().message().find("UCX_TCP_RX_SEG_SIZE=1M or more for the trainer"),
              std::string::npos)
        << c.name << ": " << refused.status().message();
    ::setenv("UCX_TCP_RX_SEG_SIZE", "1M", 1);
    auto served = connect(remote_address(daemon), o);
    ::unsetenv("UCX_TCP_RX_SEG_SIZE");
    ASSERT_TRUE(served) << c.name;
    EXPECT_EQ(testing::read_pass(*served).size(), 3u) << c.name;
  }
}

TEST_F(RemoteStreamTest, NoProcessWithUcxLoadedHasAChild) {
  testing::HangGuard guard(60, "RemoteStreamTest.NoChild");
  testing::DaemonProcess daemon(socket_path("tree"), remote_args());
  auto remote = connect(remote_address(daemon), remote_options());
  ASSERT_TRUE(remote);
  ASSERT_EQ(testing::read_batches(*remote, 3).size(), 3u);
  const pid_t gateway = gateway_of(daemon.pid());
  ASSERT_GT(gateway, 0);
  EXPECT_TRUE(maps_ucx(gateway)) << "the gateway serves over UCX";
  EXPECT_TRUE(testing::children_of(gateway).empty()) << "the gateway, with UCX loaded, started a process";
  EXPECT_FALSE(maps_ucx(daemon.pid())) << "forkfeedd starts workers: UCX must never load in it";
  for (pid_t child : testing::children_of(daemon.pid())) {
    if (child != gateway) {
      EXPECT_FALSE(maps_ucx(child)) << "worker " << child << " has UCX loaded";
    }
  }
}

TEST_F(RemoteStreamTest, TheForkReportNamesUcxAndAutoSpawnsAfterARemoteClient) {
  testing::HangGuard guard(60, "RemoteStreamTest.ForkReport");
  testing::DaemonProcess daemon(socket_path("report"), remote_args());
  auto remote = connect(remote_address(daemon), remote_options());
  ASSERT_TRUE(remote);
  const ForkReport report = ForkSafety::assess();
  EXPECT_TRUE(report.ucx_loaded);
  const auto hazards = report.hazards();
  EXPECT_NE(std::find(hazards.begin(), hazards.end(), ForkHazard::kUcx), hazards.end()) << report.summary();
  EXPECT_NE(report.summary().find("UCX"), std::string::npos) << report.summary();
  EXPECT_NE(report.describe().find("UCX is loaded"), std::string::npos) << report.describe();

  LoaderOptions local = options();
  local.start_method = StartMethod::kAuto;
  local.fork_hazard = ForkHazardPolicy::kIgnore;
  auto loader = testing::open_loader(local);
  EXPECT_EQ(loader->stats().start_method, StartMethod::kSpawn) << "a local Loader forked beside UCX";
  EXPECT_EQ(testing::read_pass(*loader).size(), 12u);
}

// The daemon's memory is not the trainer's any more: a remote client page-locks its own
// receive arena on its device (the test double of libcudart logs every call), and never
// touches device 0.
TEST_F(RemoteStreamTest, PinMemoryDevicePinsTheClientsOwnReceiveArena) {
  testing::HangGuard guard(60, "RemoteStreamTest.Pinned");
  testing::DaemonProcess daemon(socket_path("pin"), remote_args());
  const std::string log = dir_->path() + "/cuda.log";
  ::setenv("FORKFEED_CUDART", FAKE_CUDART, 1);
  ::setenv("FAKE_CUDA_LOG", log.c_str(), 1);
  StreamOptions o = remote_options();
  o.loader.pin_memory_device = 1;
  testing::Batches got;
  {
    auto remote = connect(remote_address(daemon), o);
    ASSERT_TRUE(remote);
    auto stats = remote->stats();
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    EXPECT_TRUE(stats->pinned);
    got = testing::read_pass(*remote);
  }
  ::unsetenv("FORKFEED_CUDART");
  ::unsetenv("FAKE_CUDA_LOG");
  EXPECT_TRUE(got == testing::read_pass(*testing::open_loader(options()))) << "pinned batches differ";
  std::ifstream in(log);
  std::string line, calls;
  int registered = 0, unregistered = 0;
  while (std::getline(in, line)) {
    calls += line + "\n";
    if (line.starts_with("cudaHostRegister ")) registered += 1;
    if (line.starts_with("cudaHostUnregister ")) unregistered += 1;
    if (line.starts_with("cudaHostRegister") || line.starts_with("cudaSetDevice")) {
      EXPECT_NE(line.find("device=1"), std::string::npos) << line;
    }
  }
  EXPECT_GT(registered, 1) << "a registration a receive slot: " << calls;
  EXPECT_EQ(unregistered, registered) << calls;

  StreamOptions local = remote_options();
  local.dataset.clear();
  local.loader.image_folder = root_;
  local.loader.pin_memory_device = 0;
  auto refused = Client::connect(daemon.socket(), local);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("local forkfeedd"), std::string::npos)
      << refused.status().message();
}

// Found from outside (a hostile review): closing a remote Client right after opening it
// aborted the trainer within ~20 cycles (UCX asserted: its worker destroyed with its part
// of the connection handshake still pending).
TEST_F(RemoteStreamTest, OpeningAndClosingRemoteClientsOverAndOverIsSafe) {
  testing::HangGuard guard(120, "RemoteStreamTest.OpenClose");
  testing::DaemonProcess daemon(socket_path("openclose"), remote_args());
  const std::string address = remote_address(daemon);
  for (int i = 0; i < 40; ++i) {
    auto remote = connect(address, remote_options());
    ASSERT_TRUE(remote) << "cycle " << i;
    if (i % 2 == 1) {
      ASSERT_TRUE(remote->next().ok()) << "cycle " << i;
    }
  }
  EXPECT_TRUE(testing::eventually([&] { return open_streams(daemon) == 0; }, std::chrono::seconds(5)));
  EXPECT_GT(gateway_of(daemon.pid()), 0) << "the gateway is gone";
}

// A control connection of a remote client, spoken by hand: greets with the token and
// `worker`'s address, then opens a stream and grants credits, and never progresses the
// worker (a client whose host froze or vanished, to UCX).
UniqueFd frozen_client(const std::string& address, const std::string& token, UcxWorker& worker) {
  auto where = parse_net_address(address, "address");
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*where), sizeof(sockaddr_in)), 0);
  const auto ask = [&](MessageType type, const json& body) {
    EXPECT_TRUE(send_frame(fd.get(), type, body.dump()).ok());
    while (true) {
      auto frame = recv_frame(fd.get(), false);
      EXPECT_TRUE(frame.ok());
      if (!frame.ok() || frame->type != static_cast<std::uint16_t>(MessageType::kHeartbeat)) return;
    }
  };
  ask(MessageType::kHello,
      {{"protocol", kProtocolVersion}, {"token", token}, {"worker", bytes_to_json(*worker.address())}});
  json open = to_json(StreamRequest{StreamOptions{}, {}});
  open["dataset"] = "train";
  open["batch_size"] = 16;
  open["size"] = 64;
  ask(MessageType::kOpenStream, open);
  EXPECT_TRUE(send_frame(fd.get(), MessageType::kCredit, R"({"count":3})").ok());
  return fd;
}

// Found from outside: the gateway closed each finished client's endpoint waiting up to a
// second on its one thread, so that a few clients gone silent to UCX stalled its beats
// past 3 s and every other remote client took it for lost.
TEST_F(RemoteStreamTest, ClientsGoneSilentToUcxDoNotStallTheOthers) {
  testing::HangGuard guard(120, "RemoteStreamTest.Frozen");
  testing::DaemonProcess daemon(socket_path("frozen"), remote_args());
  const std::string address = remote_address(daemon);
  auto context = UcxContext::create();
  ASSERT_TRUE(context.ok()) << context.status().message();
  std::vector<std::unique_ptr<UcxWorker>> workers;
  std::vector<UniqueFd> frozen;
  for (int i = 0; i < 5; ++i) {
    auto worker = UcxWorker::create(*context);
    ASSERT_TRUE(worker.ok());
    frozen.push_back(frozen_client(address, kToken, **worker));
    workers.push_back(std::move(worker).value());
  }
  auto bystander = connect(address, remote_options());
  ASSERT_TRUE(bystander);
  ASSERT_TRUE(testing::eventually([&] { return open_streams(daemon) == 6; }, std::chrono::seconds(10)));
  frozen.clear();  // they go: the gateway closes 5 endpoints whose peers never answer
  for (int epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(testing::read_pass(*bystander).size(), 12u) << "epoch " << epoch;
  }
  EXPECT_TRUE(testing::eventually([&] { return open_streams(daemon) == 1; }, std::chrono::seconds(10)));
}

// Found from outside: strangers holding idle connections (no token) filled the gateway's
// table and locked out clients that had one.
TEST_F(RemoteStreamTest, IdleStrangersCannotLockOutAClientWithTheToken) {
  testing::HangGuard guard(120, "RemoteStreamTest.Flood");
  // More than the gateway's table holds (1024): fds for both ends, the daemon's inherited.
  constexpr int kStrangers = 1100;
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_max < kStrangers + 300) GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is " << files.rlim_max;
  const rlimit before = files;
  files.rlim_cur = files.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  testing::DaemonProcess daemon(socket_path("flood"), remote_args());
  const std::string address = remote_address(daemon);
  auto where = parse_net_address(address, "address");
  std::vector<UniqueFd> idle;
  for (int i = 0; i < kStrangers; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*where), sizeof(sockaddr_in)), 0);
    idle.push_back(std::move(fd));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted
  auto remote = connect(address, remote_options());
  EXPECT_TRUE(remote);
  if (remote) {
    EXPECT_EQ(testing::read_pass(*remote).size(), 12u);
  }
  remote.reset();
  idle.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
}

// Found from outside: a gateway restarted after a crash listened on a new port when
// --listen said port 0, so its clients could not reconnect where they were.
TEST_F(RemoteStreamTest, ARestartedGatewayListensWhereItDid) {
  testing::HangGuard guard(120, "RemoteStreamTest.Restart");
  testing::DaemonProcess daemon(socket_path("restart"), remote_args());
  const std::string address = remote_address(daemon);
  auto remote = connect(address, remote_options());
  ASSERT_TRUE(remote);
  auto local = Client::connect(daemon.socket(), [&] {
    StreamOptions o;
    o.loader = options();
    return o;
  }());
  ASSERT_TRUE(local.ok()) << local.status().message();
  ASSERT_EQ(testing::read_batches(**local, 2).size(), 2u);
  const pid_t first = gateway_of(daemon.pid());
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  Status failed;
  while (failed.ok()) {
    auto b = remote->next();
    if (!b.ok()) failed = b.status();
  }
  EXPECT_EQ(failed.code(), Status::Code::kUnavailable) << failed.message();
  ASSERT_TRUE(testing::eventually(
      [&] {
        const pid_t now = gateway_of(daemon.pid());
        return now > 0 && now != first && remote_address(daemon) == address;
      },
      std::chrono::seconds(10)))
      << "no gateway at " << address << " again (now: " << remote_address(daemon) << ")";
  EXPECT_EQ(testing::read_pass(**local).size(), 10u) << "the local stream went on";
  auto again = connect(address, remote_options());
  ASSERT_TRUE(again);
  EXPECT_EQ(testing::read_pass(*again).size(), 12u);
}

}  // namespace
}  // namespace forkfeed
