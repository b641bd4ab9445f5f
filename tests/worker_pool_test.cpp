// WorkerPool::Impl on its own, with real workers (forked and spawned) and real arenas
// but no loader around them: starting every worker, attaching loaders, reporting each
// death once to every loader attached, replacing the dead at once, naming a worker that
// cannot start, stopping them all.
#include "process/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/common.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "plan/arena_plan.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "tests/testing/worker_override.h"
#include "tests/testing/worker_pool_seam.h"

namespace forkfeed {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kWorkers = 3;
// Generous: spawned workers load OpenCV, and the machine may be busy.
constexpr auto kWithin = 30s;

std::unique_ptr<WorkerLauncher> launcher(StartMethod method) {
  return method == StartMethod::kFork ? make_fork_launcher() : make_spawn_launcher();
}

// What a loader brings to a pool: its arena and its completion eventfd.
struct FakeLoader {
  std::shared_ptr<Arena> arena;
  UniqueFd completions{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
};

class WorkerPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = new std::string(testing::make_image_folder(dir_->path(), 8, 2));
  }
  static void TearDownTestSuite() {
    delete root_;
    delete dir_;
  }

  void SetUp() override {
    ASSERT_TRUE(testing::children_of(::getpid()).empty()) << "a child left by another test";
    // The spawned workers are this build's, not whatever an installed one is.
    ASSERT_EQ(::setenv("FORKFEED_WORKER", FORKFEED_BIN_DIR "/forkfeed-worker", 1), 0);
    auto index = DatasetIndex::from_image_folder(*root_);
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(index).value();
  }
  void TearDown() override {
    ::unsetenv("FORKFEED_WORKER");
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its pool";
  }

  // The arena a loader with these options makes for a pool of `workers` (Loader::Impl::start).
  FakeLoader new_loader(std::uint32_t workers = kWorkers) {
    const auto plan = StreamPlan::of(testing::small_options(*root_, 2)).value_or_throw();
    auto arena = Arena::create(arena_spec(plan, index_, workers).value_or_throw(), index_);
    EXPECT_TRUE(arena.ok()) << arena.status().message();
    return FakeLoader{arena.ok() ? std::move(arena).value() : nullptr};
  }

  static std::unique_ptr<WorkerPool::Impl> start(StartMethod first,
                                                 StartMethod replacement = StartMethod::kSpawn) {
    auto pool = WorkerPool::Impl::start(kWorkers, launcher(first), launcher(replacement), spdlog::level::err);
    EXPECT_TRUE(pool.ok()) << pool.status().message();
    return pool.ok() ? std::move(pool).value() : nullptr;
  }

  // True once worker `w` has written its first heartbeat.
  static bool up(const WorkerPool::Impl& pool, std::uint32_t w) {
    return pool.state(w).progress_ns.load() != 0;
  }

  // The deaths the pool reports to `loader`, until `count` of them or kWithin passed.
  static std::vector<WorkerDeath> deaths(WorkerPool::Impl& pool, const FakeLoader& loader, std::uint64_t id,
                                         std::size_t count) {
    std::vector<WorkerDeath> out;
    const auto deadline = std::chrono::steady_clock::now() + kWithin;
    while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
      pool.wait(loader.completions.get(), 1000ms);
      for (WorkerDeath& d : pool.take_deaths(id)) out.push_back(std::move(d));
    }
    return out;
  }

  static std::vector<pid_t> pids(const WorkerPool::Impl& pool) {
    std::vector<pid_t> out;
    for (std::uint32_t w = 0; w < kWorkers; ++w) out.push_back(pool.pid(w));
    std::sort(out.begin(), out.end());
    return out;
  }

  static testing::TempDir* dir_;
  static std::string* root_;
  DatasetIndex index_;
  testing::HangGuard guard_{120, "WorkerPoolTest: a wait that should have ended"};
};

testing::TempDir* WorkerPoolTest::dir_ = nullptr;
std::string* WorkerPoolTest::root_ = nullptr;

TEST_F(WorkerPoolTest, StartStartsEveryWorkerOnce) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(to_string(method));
    auto pool = start(method);
    ASSERT_NE(pool, nullptr);
    const std::vector<pid_t> started = pids(*pool);
    EXPECT_EQ(std::set<pid_t>(started.begin(), started.end()).size(), kWorkers) << "two workers share a pid";
    EXPECT_EQ(testing::children_of(::getpid()), started)
        << "the workers are this process's children, and only they";
    for (std::uint32_t w = 0; w < kWorkers; ++w) {
      EXPECT_TRUE(testing::eventually([&] { return up(*pool, w); }, kWithin))
          << "worker " << w << " never came up";
      EXPECT_EQ(pool->incarnation(w), 1u);
    }
    EXPECT_EQ(pool->start_method(), method);
  }
}

TEST_F(WorkerPoolTest, AttachHandsEveryChannelToTheWorkersLifeAndCountsTheLoader) {
  auto pool = start(StartMethod::kFork);
  ASSERT_NE(pool, nullptr);
  FakeLoader a = new_loader(), b = new_loader();
  {
    auto ma = pool->attach(*a.arena, a.completions.get());
    auto mb = pool->attach(*b.arena, b.completions.get());
    ASSERT_TRUE(ma.ok() && mb.ok());
    EXPECT_NE(ma->id(), mb->id());
    EXPECT_EQ(pool->loaders(), 2u);
    for (std::uint32_t w = 0; w < kWorkers; ++w) EXPECT_EQ(b.arena->channel(w).incarnation.load(), 1u);
  }
  EXPECT_EQ(pool->loaders(), 0u) << "a membership let go detaches";
  // An arena laid out for another pool size is refused, not served in part.
  FakeLoader other = new_loader(kWorkers + 1);
  auto refused = pool->attach(*other.arena, other.completions.get());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pool of 3 workers"), std::string::npos)
      << refused.status().message();
}

TEST_F(WorkerPoolTest, WaitWithNothingToReportSleepsForTheTimeout) {
  auto pool = start(StartMethod::kFork);
  FakeLoader loader = new_loader();
  auto m = pool->attach(*loader.arena, loader.completions.get());
  ASSERT_TRUE(m.ok());
  const auto begin = std::chrono::steady_clock::now();
  pool->wait(loader.completions.get(), 200ms);
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_TRUE(pool->take_deaths(m->id()).empty());
  EXPECT_GE(took, 100ms) << "wait() returned early with nothing to report";
  EXPECT_LT(took, 5s);
}

TEST_F(WorkerPoolTest, ADeathIsReportedOnceToEveryLoaderAndTheWorkerReplacedAtOnce) {
  auto pool = start(StartMethod::kFork, StartMethod::kSpawn);
  ASSERT_NE(pool, nullptr);
  FakeLoader a = new_loader(), b = new_loader();
  auto ma = pool->attach(*a.arena, a.completions.get());
  auto mb = pool->attach(*b.arena, b.completions.get());
  ASSERT_TRUE(ma.ok() && mb.ok());
  const pid_t killed = pool->pid(1);
  pool->kill(1, 2);  // not its life: nothing happens
  EXPECT_TRUE(testing::alive(killed));
  pool->kill(1, 1);
  const std::vector<WorkerDeath> seen = deaths(*pool, a, ma->id(), 1);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].worker, 1u);
  EXPECT_EQ(seen[0].incarnation, 1u);
  EXPECT_EQ(seen[0].pid, killed);
  EXPECT_EQ(seen[0].exit.signal, SIGKILL) << seen[0].exit.describe();
  EXPECT_TRUE(seen[0].failure.ok()) << seen[0].failure.message();
  EXPECT_EQ(testing::process_state(killed), 0) << "reaped when reported";
  // The other loader hears of it too, without a wait of its own: its eventfd was written.
  const std::vector<WorkerDeath> also = pool->take_deaths(mb->id());
  ASSERT_EQ(also.size(), 1u);
  EXPECT_EQ(also[0].pid, killed);
  // Replaced at once, by a spawned worker, as the second life of worker 1.
  EXPECT_EQ(pool->incarnation(1), 2u);
  EXPECT_NE(pool->pid(1), killed);
  EXPECT_TRUE(testing::alive(pool->pid(1)));
  EXPECT_TRUE(testing::eventually([&] { return up(*pool, 1); }, kWithin)) << "the replacement never came up";
  EXPECT_EQ(testing::live_children().size(), kWorkers);
  // Reported once: the next waits see nothing.
  EXPECT_TRUE(deaths(*pool, a, ma->id(), 0).empty());
  for (int i = 0; i < 3; ++i) pool->wait(a.completions.get(), 100ms);
  EXPECT_TRUE(pool->take_deaths(ma->id()).empty());
  // The channel still names the first life until its loader hands it over.
  EXPECT_EQ(a.arena->channel(1).incarnation.load(), 1u);
}

TEST_F(WorkerPoolTest, AWorkerThatDoesNotReadItsMessagesIsNeverWaitedFor) {
  auto pool = start(StartMethod::kFork);
  ASSERT_NE(pool, nullptr);
  FakeLoader watcher = new_loader();
  auto watching = pool->attach(*watcher.arena, watcher.completions.get());
  ASSERT_TRUE(watching.ok());
  const pid_t stopped = pool->pid(0);
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  // Loaders come and go (a daemon's streams) while worker 0 reads nothing: far more
  // messages than its socket holds. The pool keeps what does not fit and goes on.
  std::vector<FakeLoader> others;
  std::vector<WorkerPool::Impl::Membership> kept;
  for (int i = 0; i < 2000; ++i) {
    if (i % 100 == 0) {
      others.push_back(new_loader());
      auto m = pool->attach(*others.back().arena, others.back().completions.get());
      ASSERT_TRUE(m.ok()) << m.status().message();
      kept.push_back(std::move(m).value());  // these stay
    }
    auto m = pool->attach(*watcher.arena, watcher.completions.get());
    ASSERT_TRUE(m.ok()) << m.status().message();
    pool->wait(watcher.completions.get(), 0ms);
  }
  EXPECT_EQ(pool->loaders(), 1u + others.size());
  EXPECT_TRUE(pool->take_deaths(watching->id()).empty()) << "a worker was killed for reading slowly";
  EXPECT_EQ(pool->incarnation(0), 1u);
  EXPECT_GT(WorkerPoolSeam::unsent(*pool, 0), 0u) << "the socket never filled: this test tests nothing";
  // Going on, it catches up: the socket drains, and every loader kept is attached there.
  ASSERT_EQ(::kill(stopped, SIGCONT), 0);
  EXPECT_TRUE(testing::eventually(
      [&] {
        pool->wait(watcher.completions.get(), 10ms);
        return WorkerPoolSeam::unsent(*pool, 0) == 0 && WorkerPoolSeam::unsent(*pool, 1) == 0 &&
               WorkerPoolSeam::unsent(*pool, 2) == 0;
      },
      kWithin))
      << "the messages kept for the worker were never sent";
  EXPECT_TRUE(testing::alive(stopped));
  kept.clear();
  EXPECT_EQ(pool->loaders(), 1u);
}

TEST_F(WorkerPoolTest, StopAsksEveryWorkerToStopAndLeavesNoChild) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(to_string(method));
    auto pool = start(method);
    ASSERT_NE(pool, nullptr);
    const std::vector<pid_t> started = pids(*pool);
    for (std::uint32_t w = 0; w < kWorkers; ++w)
      ASSERT_TRUE(testing::eventually([&] { return up(*pool, w); }, kWithin));
    const auto begin = std::chrono::steady_clock::now();
    pool.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - begin, 1900ms) << "the workers were not asked to stop";
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker was left behind, or a zombie";
    for (pid_t pid : started) EXPECT_EQ(testing::process_state(pid), 0) << pid;
  }
}

// A worker script that cannot start, as a missing library makes forkfeed-worker.
constexpr const char* kCannotStartLine = "cannot open shared object file: libforkfeed.so.0";

TEST_F(WorkerPoolTest, ASpawnedWorkerThatCannotRunIsAFailureNamingTheExecutableAndNotReplaced) {
  testing::TempDir bin;
  const testing::WorkerOverride broken(bin, "broken-forkfeed-worker",
                                       std::string("echo \"$0: ") + kCannotStartLine + "\" >&2\nexit 127\n");
  ASSERT_TRUE(broken.ok());
  auto pool = start(StartMethod::kSpawn);
  ASSERT_NE(pool, nullptr) << "posix_spawn itself succeeds";
  FakeLoader loader = new_loader();
  auto m = pool->attach(*loader.arena, loader.completions.get());
  ASSERT_TRUE(m.ok());
  const std::vector<WorkerDeath> seen = deaths(*pool, loader, m->id(), kWorkers);
  ASSERT_EQ(seen.size(), kWorkers);
  for (const WorkerDeath& d : seen) {
    ASSERT_FALSE(d.failure.ok());
    EXPECT_EQ(d.failure.code(), Status::Code::kWorkerDied) << d.failure.message();
    EXPECT_NE(d.failure.message().find(broken.path() + " exited with code 127"), std::string::npos)
        << d.failure.message();
    EXPECT_NE(d.failure.message().find(kCannotStartLine), std::string::npos) << d.failure.message();
    EXPECT_EQ(pool->incarnation(d.worker), 0u) << "replaced, though it would fail the same way";
  }
  EXPECT_TRUE(testing::children_of(::getpid()).empty());
}

TEST_F(WorkerPoolTest, StartFailsNamingAWorkerExecutableThatIsNotExecutable) {
  const std::string path = dir_->path() + "/not-executable-forkfeed-worker";
  { std::ofstream(path) << "#!/bin/sh\nexit 0\n"; }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_EQ(::setenv("FORKFEED_WORKER", path.c_str(), 1), 0);
  auto pool = WorkerPool::Impl::start(kWorkers, launcher(StartMethod::kSpawn), launcher(StartMethod::kSpawn),
                                      spdlog::level::err);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find(path), std::string::npos) << pool.status().message();
  EXPECT_TRUE(testing::children_of(::getpid()).empty());
}

}  // namespace
}  // namespace forkfeed
