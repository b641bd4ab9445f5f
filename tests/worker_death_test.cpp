// Invariants 1, 5 and 7 under worker deaths: workers killed at random moments are
// replaced and every epoch is still delivered exactly once, in order, with the same
// pixels; a stopped worker is killed after task_timeout and replaced; past
// max_worker_restarts the iterator fails by name after delivering what was done; and no
// child process outlives the loader.
//
// Over 300 lines on purpose: each death scenario (kill, stop, timeout, start failure,
// budget) on the same fixture and reference run; splitting it would copy the fixture.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "tests/testing/worker_override.h"

namespace forkfeed {
namespace {

using testing::Batches;
using testing::BatchRecord;
using testing::WorkerOverride;
using namespace std::chrono_literals;

constexpr std::uint32_t kImages = 40;
constexpr std::uint64_t kBatches = 10;  // per epoch, with batch size 4

// A worker that never attaches; it ends with the test process.
constexpr const char* kStuckWorkerScript = "while kill -0 $PPID 2>/dev/null; do sleep 0.1; done\n";

class WorkerDeathTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), kImages, 2, 5, 40, 100);
    references_ = new std::map<std::uint64_t, Batches>();
  }
  static void TearDownTestSuite() {
    delete references_;
    delete dir_;
  }

  void SetUp() override {
    ASSERT_TRUE(testing::children_of(::getpid()).empty()) << "a child left by another test";
  }
  void TearDown() override {
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its loader";
  }

  static LoaderOptions options(std::uint32_t workers) {
    LoaderOptions o = testing::small_options(root_, workers, 4);
    o.seed = 23;
    o.log_level = "off";  // deaths are expected here
    return o;
  }

  // An undisturbed pass of `epoch`.
  static const Batches& reference(std::uint64_t epoch) {
    auto it = references_->find(epoch);
    if (it != references_->end()) return it->second;
    Batches run;
    {
      auto loader = Loader::open(options(2));
      EXPECT_TRUE(loader.ok()) << loader.status().message();
      if (loader.ok()) {
        EXPECT_TRUE((*loader)->set_epoch(epoch).ok());
        run = testing::read_pass(**loader);
      }
    }
    EXPECT_EQ(testing::exactly_once(testing::indices_of(run), kImages), "") << "reference epoch " << epoch;
    return references_->emplace(epoch, std::move(run)).first->second;
  }

  // A running worker of this process that was not killed yet, chosen by `rng`; -1 if none.
  static pid_t pick_worker(std::mt19937& rng, const std::set<pid_t>& killed) {
    std::vector<pid_t> workers = testing::live_children();
    std::erase_if(workers, [&](pid_t p) { return killed.count(p) > 0; });
    if (workers.empty()) return -1;
    return workers[rng() % workers.size()];
  }

  // Undisturbed passes of epochs 0 and 1, one after the other.
  static Batches two_epochs_reference() {
    Batches expected = reference(0);
    expected.insert(expected.end(), reference(1).begin(), reference(1).end());
    return expected;
  }

  // Into `run`: one batch, then SIGKILL to a worker chosen by `rng`, then the rest of
  // epochs 0 and 1.
  static void read_two_epochs_killing_one_worker(Loader& loader, std::mt19937& rng, Batches& run) {
    run = testing::read_batches(loader, 1);
    const pid_t victim = pick_worker(rng, {});
    ASSERT_GT(victim, 0);
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    const Batches rest = testing::read_batches(loader, 2 * kBatches - 1);
    run.insert(run.end(), rest.begin(), rest.end());
  }

  static testing::TempDir* dir_;
  static std::string root_;
  static std::map<std::uint64_t, Batches>* references_;
};
testing::TempDir* WorkerDeathTest::dir_ = nullptr;
std::string WorkerDeathTest::root_;
std::map<std::uint64_t, Batches>* WorkerDeathTest::references_ = nullptr;

TEST_F(WorkerDeathTest, RandomSigkillsKeepEveryEpochExactlyOnceAndInOrder) {
  testing::HangGuard guard(120, "WorkerDeathTest.RandomSigkills");
  std::mt19937 rng(4242);
  LoaderOptions o = options(3);
  o.max_worker_restarts = 1000;
  std::set<pid_t> killed;
  {
    auto opened = Loader::open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Loader& loader = **opened;
    constexpr std::uint64_t kKillingEpochs = 4;
    for (std::uint64_t epoch = 0; epoch <= kKillingEpochs; ++epoch) {  // the last one in peace
      SCOPED_TRACE("epoch " + std::to_string(epoch) + ", " + std::to_string(killed.size()) + " kills so far");
      Batches pass;
      for (int calls = 0; calls < 100; ++calls) {
        if (epoch < kKillingEpochs && rng() % 2 == 0) {  // about 25 kills in all
          // A random moment: at once, or while the workers decode what next() issued.
          if (rng() % 3 != 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
          const int victims = rng() % 5 == 0 ? 2 : 1;
          for (int v = 0; v < victims; ++v) {
            if (const pid_t pid = pick_worker(rng, killed); pid > 0) {
              ASSERT_EQ(::kill(pid, SIGKILL), 0);
              killed.insert(pid);
            }
          }
        }
        auto b = loader.next();
        ASSERT_TRUE(b.ok()) << b.status().message();
        if (!b->has_value()) break;
        pass.emplace_back(**b);
      }
      EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), kImages), "");
      EXPECT_EQ(testing::first_difference(pass, reference(epoch)), "")
          << "order or pixels changed by the deaths (replacements are spawned forkfeed-worker processes)";
    }
    EXPECT_GE(killed.size(), 15u) << "the test killed too few workers to mean much";
    // A whole epoch without kills went by: every death was seen by then.
    EXPECT_EQ(loader.stats().worker_restarts, killed.size());
    EXPECT_EQ(testing::live_children().size(), 3u) << "three replacements run";
    for (pid_t pid : killed) EXPECT_FALSE(testing::alive(pid)) << "killed worker " << pid;
    const auto zombies = testing::children_of(::getpid());
    EXPECT_EQ(zombies.size(), 3u) << "the dead were reaped";
  }
  EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "no worker or zombie left after the loader";
}

// Deaths mixed with resets, set_epoch and load_state: after each, every batch is the one
// the undisturbed pass has at that position (a re-issued task of a stale generation must
// not come back as a batch of the new one).
TEST_F(WorkerDeathTest, KillsMixedWithResetsAndResumes) {
  testing::HangGuard guard(120, "WorkerDeathTest.KillsMixedWithResetsAndResumes");
  std::mt19937 rng(777);
  LoaderOptions o = options(3);
  o.max_worker_restarts = 1000;
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  std::uint64_t epoch = 0, position = 0;  // the model: where the loader stands
  bool ended = false;                     // next() said the pass of epoch - 1 is over
  struct Saved {
    std::string state;
    std::uint64_t epoch, position;
  };
  std::vector<Saved> saved;
  std::set<pid_t> killed;
  for (int round = 0; round < 45; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ": epoch " + std::to_string(epoch) + " position " +
                 std::to_string(position));
    switch (rng() % 6) {
      case 0:
      case 1: {
        auto b = loader.next();
        ASSERT_TRUE(b.ok()) << b.status().message();
        ASSERT_TRUE(b->has_value());
        ASSERT_EQ(testing::first_difference({BatchRecord(**b)}, {reference(epoch)[position]}), "");
        ended = false;
        if (++position == kBatches) {
          auto end = loader.next();
          ASSERT_TRUE(end.ok() && !end->has_value()) << "no end after the last batch";
          ++epoch;
          position = 0;
          ended = true;
        }
        break;
      }
      case 2:
        if (const pid_t pid = pick_worker(rng, killed); pid > 0) {
          ASSERT_EQ(::kill(pid, SIGKILL), 0);
          killed.insert(pid);
        }
        break;
      case 3:
        if (!ended) {
          EXPECT_TRUE(loader.reset().ok());
          position = 0;
        }
        break;
      case 4: {
        const std::uint64_t e = rng() % 3;
        EXPECT_TRUE(loader.set_epoch(e).ok());
        epoch = e;
        position = 0;
        ended = false;
        break;
      }
      case 5:
        if (saved.empty() || rng() % 2 == 0) {
          saved.push_back({loader.state(), epoch, position});
        } else {
          const Saved& s = saved[rng() % saved.size()];
          const Status status = loader.load_state(s.state);
          ASSERT_TRUE(status.ok()) << status.message();
          epoch = s.epoch;
          position = s.position;
          ended = false;
        }
        break;
    }
  }
  EXPECT_GE(killed.size(), 5u);
}

// Any way of being killed is a death: other signals than SIGKILL too, but not SIGINT,
// which workers ignore (Ctrl-C reaches the whole process group; the loader decides).
// Not SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT: those count as a crash on the file
// being decoded, which is then reported as bad instead of decoded again.
TEST_F(WorkerDeathTest, OtherSignalsAreDeathsTooButSigintIsIgnored) {
  testing::HangGuard guard(60, "WorkerDeathTest.OtherSignals");
  std::mt19937 rng(99);
  auto opened = Loader::open(options(3));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  Batches run = testing::read_batches(loader, 1);  // the workers are in their task loops
  for (pid_t pid : testing::live_children()) ::kill(pid, SIGINT);
  const int signals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
  std::set<pid_t> killed;
  for (int sig : signals) {
    // Once every worker was killed, the replacements come when next() sees the deaths.
    pid_t pid = -1;
    for (int tries = 0; tries < 10 && (pid = pick_worker(rng, killed)) < 0; ++tries) {
      const Batches one = testing::read_batches(loader, 1);
      run.insert(run.end(), one.begin(), one.end());
    }
    ASSERT_GT(pid, 0) << "no worker to signal";
    ASSERT_EQ(::kill(pid, sig), 0);
    killed.insert(pid);
    // Dead (a zombie, or already reaped) before the next call, which must then see it.
    ASSERT_TRUE(testing::eventually([&] { return !testing::alive(pid); }, std::chrono::seconds(10)));
    const Batches one = testing::read_batches(loader, 1);
    run.insert(run.end(), one.begin(), one.end());
  }
  const Batches rest = testing::read_batches(loader, 2 * kBatches - run.size());
  run.insert(run.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(run, two_epochs_reference()), "");
  EXPECT_EQ(loader.stats().worker_restarts, 4u) << "4 signal deaths, SIGINT none";
}

// A SIGSTOPped worker makes no progress: after task_timeout_ms it is killed, replaced,
// and its batches go to the others; the epoch completes exactly once.
TEST_F(WorkerDeathTest, AStoppedWorkerIsKilledAfterTaskTimeoutAndReplaced) {
  testing::HangGuard guard(60, "WorkerDeathTest.StoppedWorker");
  std::mt19937 rng(17);
  LoaderOptions o = options(3);
  o.task_timeout_ms = 300;
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  Batches pass = testing::read_batches(loader, 1);
  const pid_t stopped = pick_worker(rng, {});
  ASSERT_GT(stopped, 0);
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  ASSERT_TRUE(testing::eventually([&] { return testing::process_state(stopped) == 'T'; }, 2s));
  const auto start = std::chrono::steady_clock::now();
  const Batches rest = testing::read_pass(loader);
  pass.insert(pass.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(pass, reference(0)), "");
  // The stopped worker may have had nothing to do in epoch 0; it has in a later one.
  for (std::uint64_t epoch = 1; epoch < 4 && loader.stats().worker_restarts == 0; ++epoch) {
    EXPECT_EQ(testing::first_difference(testing::read_pass(loader), reference(epoch)), "")
        << "epoch " << epoch;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(loader.stats().worker_restarts, 1u);
  EXPECT_LT(took, 10s) << "recovering from a stopped worker took too long";
  EXPECT_TRUE(testing::eventually([&] { return testing::process_state(stopped) == 0; }, 2s))
      << "the stopped worker was killed and reaped (state now '" << testing::process_state(stopped) << "')";
  EXPECT_EQ(testing::live_children().size(), 3u);
}

// task_timeout measures a worker busy on one sample, not a consumer that is slow: workers
// that sat idle while the trainer was busy are not killed when they are given work again.
TEST_F(WorkerDeathTest, ASlowConsumerIsNotAStuckWorker) {
  testing::HangGuard guard(60, "WorkerDeathTest.SlowConsumer");
  for (std::uint32_t workers : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    LoaderOptions o = options(workers);
    o.task_timeout_ms = 100;
    auto opened = Loader::open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Loader& loader = **opened;
    Batches pass;
    for (int calls = 0; calls < 20; ++calls) {
      auto b = loader.next();
      ASSERT_TRUE(b.ok()) << b.status().message();
      if (!b->has_value()) break;
      pass.emplace_back(**b);
      b->reset();  // the slot is free again while the trainer "trains"
      if (pass.size() <= 6) std::this_thread::sleep_for(160ms);
    }
    EXPECT_EQ(testing::first_difference(pass, reference(0)), "");
    EXPECT_EQ(loader.stats().worker_restarts, 0u) << "a healthy worker was killed as stuck";
  }
}

// A replacement is a freshly spawned forkfeed-worker, which needs a while to start (exec,
// dynamic loading of OpenCV, attaching the arena: 0.1-0.2 s on an idle machine, more on
// a busy node or a slow file system) before it can touch its first task. Its start-up is
// not a stuck task. Here replacements take 0.5 s to start, and task_timeout is 0.3 s:
// the one death the test causes must be the only one.
TEST_F(WorkerDeathTest, TaskTimeoutDoesNotCountAReplacementsStartUp) {
  testing::HangGuard guard(60, "WorkerDeathTest.ReplacementStartUp");
  testing::TempDir bin;
  const WorkerOverride slow_worker(
      bin, "slow-forkfeed-worker",
      "sleep 0.5\nexec '" + std::string(FORKFEED_BIN_DIR) + "/forkfeed-worker' \"$@\"\n");
  ASSERT_TRUE(slow_worker.ok());

  std::mt19937 rng(8);
  LoaderOptions o = options(2);
  o.task_timeout_ms = 300;
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  Batches run;
  ASSERT_NO_FATAL_FAILURE(read_two_epochs_killing_one_worker(loader, rng, run));
  EXPECT_EQ(testing::first_difference(run, two_epochs_reference()), "");
  EXPECT_EQ(loader.stats().worker_restarts, 1u) << "replacements were killed as stuck while starting";
}

// A replacement that never gets as far as its task loop (a start-up that hangs: a stuck
// file system, a stopped process) holds the batches re-issued to it. With task_timeout
// set, that must end in bounded time too — by replacing it again, giving its batches to
// others, or failing past max_worker_restarts — never in a next() that waits forever.
TEST_F(WorkerDeathTest, AReplacementThatNeverStartsIsNoHangWithTaskTimeout) {
  testing::HangGuard guard(20, "WorkerDeathTest.AReplacementThatNeverStarts (a next() that never returned)");
  testing::TempDir bin;
  const WorkerOverride stuck_worker(bin, "stuck-forkfeed-worker", kStuckWorkerScript);
  ASSERT_TRUE(stuck_worker.ok());

  std::mt19937 rng(9);
  LoaderOptions o = options(2);
  o.task_timeout_ms = 300;
  o.max_worker_restarts = 1;
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  Batches run = testing::read_batches(loader, 1);
  const pid_t victim = pick_worker(rng, {});
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  Status failure;
  bool ended = false;
  for (int calls = 0; calls < 50 && failure.ok() && !ended; ++calls) {
    auto b = loader.next();
    if (!b.ok()) {
      failure = b.status();
    } else if (!b->has_value()) {
      ended = true;
    } else {
      run.emplace_back(**b);
    }
  }
  if (ended) {
    EXPECT_EQ(testing::first_difference(run, reference(0)), "");
  } else {
    ASSERT_FALSE(failure.ok());
    EXPECT_EQ(failure.code(), Status::Code::kWorkerDied) << failure.message();
  }
}

// Work goes to workers that are up: the batches of a dead worker, and new ones, go to
// the survivors while its replacement starts — so a replacement that never starts
// holds nothing, and the pass ends without task_timeout.
TEST_F(WorkerDeathTest, WorkGoesToWorkersThatAreUpNotToAReplacementStillStarting) {
  testing::HangGuard guard(30, "WorkerDeathTest.WorkGoesToWorkersThatAreUp (work waited for a replacement)");
  testing::TempDir bin;
  const WorkerOverride stuck_worker(bin, "stuck-forkfeed-worker", kStuckWorkerScript);
  ASSERT_TRUE(stuck_worker.ok());

  std::mt19937 rng(10);
  auto opened = Loader::open(options(2));  // task_timeout_ms = 0: nothing would rescue a task given to it
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  Batches run;
  ASSERT_NO_FATAL_FAILURE(read_two_epochs_killing_one_worker(loader, rng, run));
  EXPECT_EQ(testing::first_difference(run, two_epochs_reference()), "");
  EXPECT_EQ(loader.stats().worker_restarts, 1u);
}

// A worker that cannot start at all (its libraries missing: the dynamic loader exits
// 127 before the worker's first heartbeat) would fail the same way every time, so it is
// not restarted: the loader fails at once, naming the executable and the last line it
// wrote to stderr.
constexpr const char* kCannotStartLine =
    "error while loading shared libraries: libforkfeed.so.0: cannot open shared object file";

// A worker script that counts its runs in `runs` and cannot start.
std::string cannot_start_script(const std::string& runs, int exit_code = 127) {
  return "echo run >> '" + runs + "'\necho 'an earlier line' >&2\necho \"$0: " + kCannotStartLine +
         "\" >&2\nexit " + std::to_string(exit_code) + "\n";
}

std::size_t lines_in(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// The first error of open() or of the next() calls after it, reading at most `calls` batches.
Status first_failure(const LoaderOptions& o, int calls) {
  auto opened = Loader::open(o);
  if (!opened.ok()) return opened.status();
  for (int i = 0; i < calls; ++i) {
    auto b = (*opened)->next();
    if (!b.ok()) return b.status();
  }
  return Status::Ok();
}

TEST_F(WorkerDeathTest, AWorkerThatCannotStartFailsTheLoaderAtOnceWithItsStderr) {
  testing::HangGuard guard(60, "WorkerDeathTest.AWorkerThatCannotStart");
  testing::TempDir bin;
  const std::string runs = bin.path() + "/runs";
  const WorkerOverride broken(bin, "broken-forkfeed-worker", cannot_start_script(runs));
  ASSERT_TRUE(broken.ok());
  LoaderOptions o = options(2);
  o.start_method = StartMethod::kSpawn;
  const Status failure = first_failure(o, 3 * static_cast<int>(kBatches));
  ASSERT_FALSE(failure.ok()) << "a loader whose workers cannot start read 3 epochs";
  EXPECT_EQ(failure.code(), Status::Code::kWorkerDied) << failure.message();
  EXPECT_NE(failure.message().find(bin.path() + "/broken-forkfeed-worker"), std::string::npos)
      << failure.message();
  EXPECT_NE(failure.message().find(kCannotStartLine), std::string::npos) << failure.message();
  EXPECT_EQ(failure.message().find("an earlier line"), std::string::npos)
      << "the last line only: " << failure.message();
  EXPECT_LE(lines_in(runs), 2u) << "a worker that cannot start was restarted";
}

// forkfeed-worker refuses what it was given with exit status 2 (an arena of another
// forkfeed build, a wrong fd): that would fail the same way again, too.
TEST_F(WorkerDeathTest, AWorkerThatRefusesWhatItWasGivenFailsTheLoaderAtOnce) {
  testing::HangGuard guard(60, "WorkerDeathTest.AWorkerThatRefuses");
  testing::TempDir bin;
  const std::string runs = bin.path() + "/runs";
  const WorkerOverride refusing(bin, "refusing-forkfeed-worker", cannot_start_script(runs, 2));
  ASSERT_TRUE(refusing.ok());
  LoaderOptions o = options(2);
  o.start_method = StartMethod::kSpawn;
  const Status failure = first_failure(o, 3 * static_cast<int>(kBatches));
  ASSERT_FALSE(failure.ok()) << "a loader whose workers refuse to start read 3 epochs";
  EXPECT_EQ(failure.code(), Status::Code::kWorkerDied) << failure.message();
  EXPECT_NE(failure.message().find("could not start"), std::string::npos) << failure.message();
  EXPECT_NE(failure.message().find(kCannotStartLine), std::string::npos) << failure.message();
  EXPECT_LE(lines_in(runs), 2u) << "a worker that refuses to start was restarted";
}

// The same for a replacement: the first workers were forked, the one that replaces a dead
// one is spawned and cannot start.
TEST_F(WorkerDeathTest, AReplacementThatCannotStartFailsTheLoaderAtOnce) {
  testing::HangGuard guard(60, "WorkerDeathTest.AReplacementThatCannotStart");
  LoaderOptions o = options(2);
  o.start_method = StartMethod::kFork;
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  Batches run = testing::read_batches(loader, 1);
  testing::TempDir bin;
  const std::string runs = bin.path() + "/runs";
  const WorkerOverride broken(bin, "broken-forkfeed-worker", cannot_start_script(runs));
  ASSERT_TRUE(broken.ok());
  std::mt19937 rng(11);
  const pid_t victim = pick_worker(rng, {});
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_TRUE(testing::eventually([&] { return !testing::alive(victim); }, std::chrono::seconds(10)));
  // This call sees the death and spawns the replacement; once that has run and exited,
  // the next calls see its death too.
  auto first = loader.next();
  Status failure = first.ok() ? Status::Ok() : first.status();
  ASSERT_TRUE(testing::eventually([&] { return lines_in(runs) == 1 && testing::live_children().size() == 1; },
                                  std::chrono::seconds(20)));
  for (int calls = 0; calls < 3 * static_cast<int>(kBatches) && failure.ok(); ++calls) {
    auto b = loader.next();
    if (!b.ok()) failure = b.status();
  }
  ASSERT_FALSE(failure.ok()) << "the replacement that cannot start went unnoticed for 3 epochs";
  EXPECT_EQ(failure.code(), Status::Code::kWorkerDied) << failure.message();
  EXPECT_NE(failure.message().find(bin.path() + "/broken-forkfeed-worker"), std::string::npos)
      << failure.message();
  EXPECT_NE(failure.message().find(kCannotStartLine), std::string::npos) << failure.message();
  EXPECT_EQ(lines_in(runs), 1u) << "a replacement that cannot start was replaced again";
  EXPECT_EQ(loader.stats().worker_restarts, 1u) << failure.message();
}

// An executable that cannot even be executed (here its interpreter is missing) fails
// Loader::open, naming it.
TEST_F(WorkerDeathTest, AWorkerThatCannotBeExecutedFailsOpen) {
  testing::TempDir bin;
  const std::string path = bin.path() + "/unrunnable-forkfeed-worker";
  {
    std::ofstream script(path);
    script << "#!/nonexistent/interpreter\n";
  }
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  ASSERT_EQ(::setenv("FORKFEED_WORKER", path.c_str(), 1), 0);
  LoaderOptions o = options(2);
  o.start_method = StartMethod::kSpawn;
  auto opened = Loader::open(o);
  ::unsetenv("FORKFEED_WORKER");
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find(path), std::string::npos) << opened.status().message();
}

// Past max_worker_restarts: the batches completed before are delivered, in order, then
// next() fails with kWorkerDied naming the option, and keeps failing; nothing hangs.
TEST_F(WorkerDeathTest, PastMaxWorkerRestartsNextFailsAfterDeliveringWhatWasDone) {
  testing::HangGuard guard(60, "WorkerDeathTest.PastMaxWorkerRestarts");
  std::mt19937 rng(5);
  LoaderOptions o = options(3);
  o.max_worker_restarts = 1;
  {
    auto opened = Loader::open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Loader& loader = **opened;
    std::set<pid_t> killed;
    Batches run = testing::read_batches(loader, 1);
    Status failure;
    for (int calls = 0; calls < 100 && failure.ok(); ++calls) {
      if (killed.size() < 2 && calls % 2 == 0) {
        const pid_t pid = pick_worker(rng, killed);
        ASSERT_GT(pid, 0);
        ASSERT_EQ(::kill(pid, SIGKILL), 0);
        killed.insert(pid);
      }
      auto b = loader.next();
      if (!b.ok()) {
        failure = b.status();
      } else if (b->has_value()) {
        run.emplace_back(**b);
      }
    }
    ASSERT_FALSE(failure.ok()) << "no error after 2 deaths with max_worker_restarts 1; delivered "
                               << run.size();
    EXPECT_EQ(failure.code(), Status::Code::kWorkerDied) << failure.message();
    EXPECT_NE(failure.message().find("max_worker_restarts"), std::string::npos) << failure.message();
    // What was delivered is the start of the undisturbed run, with no gap or repeat.
    Batches expected;
    for (std::uint64_t e = 0; expected.size() < run.size(); ++e) {
      expected.insert(expected.end(), reference(e).begin(), reference(e).end());
    }
    expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(run.size()), expected.end());
    EXPECT_EQ(testing::first_difference(run, expected), "");
    for (int i = 0; i < 3; ++i) {
      auto again = loader.next();
      ASSERT_FALSE(again.ok()) << "the error must stay";
      EXPECT_EQ(again.status().code(), Status::Code::kWorkerDied);
    }
  }
}

}  // namespace
}  // namespace forkfeed
