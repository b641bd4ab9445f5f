// The start-method policy: auto forks only a clean process; fork with a hazard warns,
// refuses or says nothing as fork_hazard asks; and the loader really starts that way.
#include "loader/start_method.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "forkfeed/loader.h"
#include "testing/processes.h"
#include "testing/temp_dataset.h"

namespace forkfeed {
namespace {

ForkReport clean() {
  ForkReport r;
  r.threads = 1;
  return r;
}

ForkReport with_rdma() {
  ForkReport r = clean();
  r.rdma_devices_open = {"fd 9 -> /dev/infiniband/uverbs0"};
  return r;
}

LoaderOptions options(StartMethod method, ForkHazardPolicy policy) {
  LoaderOptions o;
  o.start_method = method;
  o.fork_hazard = policy;
  return o;
}

TEST(ChooseStartMethod, AutoForksOnlyACleanProcess) {
  auto a = choose_start_method(options(StartMethod::kAuto, ForkHazardPolicy::kWarn), clean());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->launcher->method(), StartMethod::kFork);
  auto b = choose_start_method(options(StartMethod::kAuto, ForkHazardPolicy::kError), with_rdma());
  ASSERT_TRUE(b.ok()) << "auto never refuses: it spawns";
  EXPECT_EQ(b->launcher->method(), StartMethod::kSpawn);
  EXPECT_NE(b->why.find("uverbs0"), std::string::npos) << b->why;
  EXPECT_TRUE(b->warning.empty());
}

TEST(ChooseStartMethod, ForkWithAHazardFollowsThePolicy) {
  auto refused = choose_start_method(options(StartMethod::kFork, ForkHazardPolicy::kError), with_rdma());
  ASSERT_FALSE(refused.ok());
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("fork_hazard=error"), std::string::npos) << m;
  EXPECT_NE(m.find("RDMAV_FORK_SAFE=1"), std::string::npos) << "names the remedies: " << m;
  EXPECT_NE(m.find("spawn"), std::string::npos) << m;

  auto warned = choose_start_method(options(StartMethod::kFork, ForkHazardPolicy::kWarn), with_rdma());
  ASSERT_TRUE(warned.ok());
  EXPECT_EQ(warned->launcher->method(), StartMethod::kFork);
  EXPECT_FALSE(warned->warning.empty());

  auto silent = choose_start_method(options(StartMethod::kFork, ForkHazardPolicy::kIgnore), with_rdma());
  ASSERT_TRUE(silent.ok());
  EXPECT_TRUE(silent->warning.empty());

  auto spawn = choose_start_method(options(StartMethod::kSpawn, ForkHazardPolicy::kError), with_rdma());
  ASSERT_TRUE(spawn.ok());
  EXPECT_EQ(spawn->launcher->method(), StartMethod::kSpawn);
}

// The executable a worker runs: the test binary for a forked one, forkfeed-worker else.
std::string exe_of(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).filename().string();
}

TEST(LoaderStartMethod, AnotherThreadMakesAutoSpawnAndErrorRefuse) {
  testing::TempDir dir;
  LoaderOptions o;
  o.image_folder = testing::make_image_folder(dir.path(), 8, 2);
  o.workers = 2;
  o.batch_size = 4;
  o.size = 16;
  o.log_level = "error";
  std::atomic<bool> done{false};
  std::thread busy([&] {
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  {
    o.start_method = StartMethod::kFork;
    o.fork_hazard = ForkHazardPolicy::kError;
    const Status refused = Loader::open(o).status();
    EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(refused.message().find("thread"), std::string::npos) << refused.message();
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "refused before any worker started";
  }
  {
    o.start_method = StartMethod::kAuto;
    auto loader = Loader::open(o);
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    for (pid_t pid : testing::children_of(::getpid())) EXPECT_EQ(exe_of(pid), "forkfeed-worker");
    int samples = 0;
    for (Batch& b : **loader) samples += static_cast<int>(b.size());
    EXPECT_EQ(samples, 8);
  }
  done = true;
  busy.join();
}

}  // namespace
}  // namespace forkfeed
