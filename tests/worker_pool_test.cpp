// WorkerPool on its own, with real workers (forked and spawned) on a real arena and no
// loader around them: starting one per channel, reporting each death once, replacing a
// worker on its rebuilt channel, naming a worker that cannot start, stopping them all.
#include "process/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/common.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "loader/slot_count.h"
#include "loader/transform_spec.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "tests/testing/worker_override.h"
#include "workers/transform.h"

namespace forkfeed {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kWorkers = 3;
// Generous: spawned workers load OpenCV, and the machine may be busy.
constexpr auto kWithin = 30s;

std::unique_ptr<WorkerLauncher> launcher(StartMethod method) {
  return method == StartMethod::kFork ? make_fork_launcher() : make_spawn_launcher();
}

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
    ASSERT_NO_FATAL_FAILURE(new_arena());
  }

  // A fresh arena, the one a loader with these options makes (Loader::Impl::start): no
  // stop asked, no worker up yet.
  void new_arena() {
    const LoaderOptions o = testing::small_options(*root_, kWorkers);
    auto arena = Arena::create(arena_spec(o), index_);
    ASSERT_TRUE(arena.ok()) << arena.status().message();
    arena_ = std::move(arena).value();
  }
  void TearDown() override {
    ::unsetenv("FORKFEED_WORKER");
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its pool";
  }

  std::unique_ptr<WorkerPool> make_pool(StartMethod first, StartMethod replacement = StartMethod::kSpawn) {
    return std::make_unique<WorkerPool>(arena_, launcher(first), launcher(replacement), spdlog::level::err);
  }

  // True once worker `id` has written its first heartbeat: it runs on its channel.
  bool up(std::uint32_t id) const { return arena_->channel(id).progress_ns.load() != 0; }

  // The workers wait() reports exited, in order, until `count` of them have been or
  // kWithin has passed.
  static std::vector<std::uint32_t> exits(WorkerPool& pool, std::size_t count) {
    std::vector<std::uint32_t> out;
    const auto deadline = std::chrono::steady_clock::now() + kWithin;
    while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
      const WorkerPool::Events events = pool.wait(1s);
      out.insert(out.end(), events.exited.begin(), events.exited.end());
    }
    return out;
  }

  static std::vector<pid_t> pids(const WorkerPool& pool) {
    std::vector<pid_t> out;
    for (std::uint32_t id = 0; id < kWorkers; ++id) out.push_back(pool.pid(id));
    std::sort(out.begin(), out.end());
    return out;
  }

  static testing::TempDir* dir_;
  static std::string* root_;
  DatasetIndex index_;
  std::shared_ptr<Arena> arena_;
  testing::HangGuard guard_{120, "WorkerPoolTest: a wait that should have ended"};
};

testing::TempDir* WorkerPoolTest::dir_ = nullptr;
std::string* WorkerPoolTest::root_ = nullptr;

TEST_F(WorkerPoolTest, StartStartsOneLiveWorkerPerChannel) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(to_string(method));
    ASSERT_NO_FATAL_FAILURE(new_arena());
    auto pool = make_pool(method);
    ASSERT_TRUE(pool->start().ok());
    const std::vector<pid_t> started = pids(*pool);
    EXPECT_EQ(std::set<pid_t>(started.begin(), started.end()).size(), kWorkers) << "two workers share a pid";
    EXPECT_EQ(testing::children_of(::getpid()), started) << "the workers are this process's children, and only they";
    for (pid_t pid : started) EXPECT_TRUE(testing::alive(pid)) << pid;
    for (std::uint32_t id = 0; id < kWorkers; ++id) {
      EXPECT_TRUE(testing::eventually([&] { return up(id); }, kWithin)) << "worker " << id << " never came up";
    }
    pool->stop();
  }
}

TEST_F(WorkerPoolTest, StartMethodIsTheFirstLaunchers) {
  EXPECT_EQ(make_pool(StartMethod::kFork, StartMethod::kSpawn)->start_method(), StartMethod::kFork);
  EXPECT_EQ(make_pool(StartMethod::kSpawn, StartMethod::kFork)->start_method(), StartMethod::kSpawn);
}

TEST_F(WorkerPoolTest, WaitWithNothingToReportSleepsForTheTimeout) {
  auto pool = make_pool(StartMethod::kFork);
  ASSERT_TRUE(pool->start().ok());
  const auto start = std::chrono::steady_clock::now();
  const WorkerPool::Events events = pool->wait(200ms);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(events.exited.empty());
  EXPECT_GE(took, 100ms) << "wait() returned early with nothing to report";
  EXPECT_LT(took, 5s);
}

TEST_F(WorkerPoolTest, AKilledWorkerIsReportedOnceWithSigkill) {
  auto pool = make_pool(StartMethod::kFork);
  ASSERT_TRUE(pool->start().ok());
  const pid_t killed = pool->pid(1);
  pool->kill(1);
  EXPECT_EQ(exits(*pool, 1), std::vector<std::uint32_t>{1});
  const ExitInfo exit = pool->exit_info(1);
  EXPECT_EQ(exit.signal, SIGKILL) << exit.describe();
  EXPECT_NE(exit.describe().find("SIGKILL"), std::string::npos) << exit.describe();
  EXPECT_EQ(testing::process_state(killed), 0) << "reaped when reported";
  EXPECT_TRUE(pool->start_failure(1).ok()) << "a forked worker never fails to start";
  // Reported once: the next waits see nothing (its pidfd stays readable).
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(pool->wait(100ms).exited.empty());
  EXPECT_TRUE(testing::alive(pool->pid(0)));
  EXPECT_TRUE(testing::alive(pool->pid(2)));
}

TEST_F(WorkerPoolTest, AReplacementRunsOnTheRebuiltChannelWithANewPid) {
  auto pool = make_pool(StartMethod::kFork, StartMethod::kSpawn);
  ASSERT_TRUE(pool->start().ok());
  ASSERT_TRUE(testing::eventually([&] { return up(0); }, kWithin));
  const pid_t old_pid = pool->pid(0);
  pool->kill(0);
  ASSERT_EQ(exits(*pool, 1), std::vector<std::uint32_t>{0});
  arena_->reset_channel(0);  // as Supervisor::on_exit does
  ASSERT_FALSE(up(0));
  const Status replaced = pool->replace(0);
  ASSERT_TRUE(replaced.ok()) << replaced.message();
  const pid_t new_pid = pool->pid(0);
  EXPECT_NE(new_pid, old_pid);
  EXPECT_TRUE(testing::alive(new_pid));
  EXPECT_EQ(testing::process_state(old_pid), 0);
  EXPECT_TRUE(testing::eventually([&] { return up(0); }, kWithin)) << "the replacement never attached to its channel";
  EXPECT_EQ(testing::live_children().size(), kWorkers);
  // The replacement is watched like the first: its death is reported too.
  pool->kill(0);
  EXPECT_EQ(exits(*pool, 1), std::vector<std::uint32_t>{0});
  EXPECT_EQ(pool->exit_info(0).signal, SIGKILL);
}

TEST_F(WorkerPoolTest, StopAsksEveryWorkerToStopLeavesNoChildAndIsIdempotent) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(to_string(method));
    ASSERT_NO_FATAL_FAILURE(new_arena());
    auto pool = make_pool(method);
    ASSERT_TRUE(pool->start().ok());
    const std::vector<pid_t> started = pids(*pool);
    const auto start = std::chrono::steady_clock::now();
    pool->stop(40s);  // a worker that was not asked would be killed only after the grace
    EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "the workers were not asked to stop";
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker was left behind, or a zombie";
    for (pid_t pid : started) EXPECT_EQ(testing::process_state(pid), 0) << pid;
    pool->stop();
    pool.reset();  // and the destructor stops again
    EXPECT_TRUE(testing::children_of(::getpid()).empty());
  }
}

// A worker script that cannot start, as a missing library makes forkfeed-worker.
constexpr const char* kCannotStartLine = "cannot open shared object file: libforkfeed.so.0";

TEST_F(WorkerPoolTest, ASpawnedWorkerThatCannotRunIsAStartFailureNamingTheExecutable) {
  testing::TempDir bin;
  const testing::WorkerOverride broken(bin, "broken-forkfeed-worker",
                                       std::string("echo \"$0: ") + kCannotStartLine + "\" >&2\nexit 127\n");
  ASSERT_TRUE(broken.ok());
  auto pool = make_pool(StartMethod::kSpawn);
  ASSERT_TRUE(pool->start().ok()) << "posix_spawn itself succeeds";
  std::vector<std::uint32_t> exited = exits(*pool, kWorkers);
  std::sort(exited.begin(), exited.end());
  ASSERT_EQ(exited, (std::vector<std::uint32_t>{0, 1, 2}));
  const Status failure = pool->start_failure(0);
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), Status::Code::kWorkerDied) << failure.message();
  EXPECT_NE(failure.message().find(broken.path() + " exited with code 127"), std::string::npos) << failure.message();
  EXPECT_NE(failure.message().find(kCannotStartLine), std::string::npos) << failure.message();
  EXPECT_TRUE(pool->start_failure(0).ok()) << "asked again: its stderr was read already";
  // One that had started (its first heartbeat) and then exited 127 merely died.
  arena_->channel(1).progress_ns.store(1);
  EXPECT_TRUE(pool->start_failure(1).ok());
}

TEST_F(WorkerPoolTest, StartFailsNamingAWorkerExecutableThatIsNotExecutable) {
  const std::string path = dir_->path() + "/not-executable-forkfeed-worker";
  { std::ofstream(path) << "#!/bin/sh\nexit 0\n"; }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_EQ(::setenv("FORKFEED_WORKER", path.c_str(), 1), 0);
  auto pool = make_pool(StartMethod::kSpawn);
  const Status started = pool->start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.message().find(path), std::string::npos) << started.message();
  EXPECT_TRUE(testing::children_of(::getpid()).empty());
}

}  // namespace
}  // namespace forkfeed
