// The start-method policy: auto forks only a clean process; fork with a hazard warns,
// refuses or says nothing as fork_hazard asks; and the loader really starts that way.
#include "process/start_method.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/logging.h"
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

TEST(ChooseStartMethod, AutoForksOnlyACleanProcess) {
  auto a = choose_start_method(StartMethod::kAuto, ForkHazardPolicy::kWarn, clean());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->launcher->method(), StartMethod::kFork);
  auto b = choose_start_method(StartMethod::kAuto, ForkHazardPolicy::kError, with_rdma());
  ASSERT_TRUE(b.ok()) << "auto never refuses: it spawns";
  EXPECT_EQ(b->launcher->method(), StartMethod::kSpawn);
  EXPECT_NE(b->why.find("uverbs0"), std::string::npos) << b->why;
  EXPECT_TRUE(b->warning.empty());
}

TEST(ChooseStartMethod, ForkWithAHazardFollowsThePolicy) {
  auto refused = choose_start_method(StartMethod::kFork, ForkHazardPolicy::kError, with_rdma());
  ASSERT_FALSE(refused.ok());
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("fork_hazard=error"), std::string::npos) << m;
  EXPECT_NE(m.find("RDMAV_FORK_SAFE=1"), std::string::npos) << "names the remedies: " << m;
  EXPECT_NE(m.find("spawn"), std::string::npos) << m;

  auto warned = choose_start_method(StartMethod::kFork, ForkHazardPolicy::kWarn, with_rdma());
  ASSERT_TRUE(warned.ok());
  EXPECT_EQ(warned->launcher->method(), StartMethod::kFork);
  EXPECT_FALSE(warned->warning.empty());

  auto silent = choose_start_method(StartMethod::kFork, ForkHazardPolicy::kIgnore, with_rdma());
  ASSERT_TRUE(silent.ok());
  EXPECT_TRUE(silent->warning.empty());

  auto spawn = choose_start_method(StartMethod::kSpawn, ForkHazardPolicy::kError, with_rdma());
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

namespace forkfeed {
namespace {

// Counts the warnings the loader's logger emits while it is in scope.
class WarningCounter : public spdlog::sinks::base_sink<std::mutex> {
 public:
  int count() {
    std::lock_guard lock(mutex_);
    return warnings_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    warnings_ += msg.level == spdlog::level::warn;
  }
  void flush_() override {}

 private:
  int warnings_ = 0;
};

// A stand-in RDMA device file, really open in this process, under a device directory
// the loader is pointed at: the real scanning code has to find it.
class RdmaInUse : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = dev_.path() + "/uverbs0";
    { std::ofstream(device_) << "stand-in"; }
    fd_.reset(::open(device_.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd_.valid());
    ASSERT_EQ(::setenv("FORKFEED_RDMA_DEVICE_DIR", dev_.path().c_str(), 1), 0);
    o_.image_folder = testing::make_image_folder(data_.path(), 8, 2);
    o_.workers = 2;
    o_.batch_size = 4;
    o_.size = 16;
    o_.log_level = "info";
  }
  void TearDown() override { ::unsetenv("FORKFEED_RDMA_DEVICE_DIR"); }

  testing::TempDir dev_, data_;
  std::string device_;
  UniqueFd fd_;
  LoaderOptions o_;
};

TEST_F(RdmaInUse, TheReportFindsTheOpenDeviceFile) {
  const ForkReport r = ForkSafety::assess();
  EXPECT_TRUE(r.rdma_in_use());
  ASSERT_FALSE(r.rdma_devices_open.empty());
  EXPECT_NE(r.rdma_devices_open[0].find(device_), std::string::npos) << r.rdma_devices_open[0];
}

TEST_F(RdmaInUse, ErrorRefusesToStartNamingTheDeviceFile) {
  o_.start_method = StartMethod::kFork;
  o_.fork_hazard = ForkHazardPolicy::kError;
  const Status s = Loader::open(o_).status();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find(device_), std::string::npos) << s.message();
  EXPECT_TRUE(testing::children_of(::getpid()).empty());
}

TEST_F(RdmaInUse, WarnStartsAndWarnsExactlyOnce) {
  o_.start_method = StartMethod::kFork;
  o_.fork_hazard = ForkHazardPolicy::kWarn;
  auto counter = std::make_shared<WarningCounter>();
  auto logger = loader_logger();
  logger->sinks().push_back(counter);
  {
    auto loader = Loader::open(o_);
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    int samples = 0;
    for (Batch& b : **loader) samples += static_cast<int>(b.size());
    EXPECT_EQ(samples, 8);
    EXPECT_EQ((*loader)->stats().start_method, StartMethod::kFork);
  }
  logger->sinks().pop_back();
  EXPECT_EQ(counter->count(), 1);
}

TEST_F(RdmaInUse, AutoSpawns) {
  o_.start_method = StartMethod::kAuto;
  auto loader = Loader::open(o_);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  EXPECT_EQ((*loader)->stats().start_method, StartMethod::kSpawn);
  for (pid_t pid : testing::children_of(::getpid())) EXPECT_EQ(exe_of(pid), "forkfeed-worker");
}

TEST(MarkInitialized, IsHonouredByTheLoader) {
  testing::TempDir data;
  LoaderOptions o;
  o.image_folder = testing::make_image_folder(data.path(), 4, 1);
  o.start_method = StartMethod::kFork;
  o.fork_hazard = ForkHazardPolicy::kError;
  o.log_level = "off";
  // mark_initialized() is irrevocable: try it in a child, keep this process clean.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool clean_start = Loader::open(o).ok();
    rdma::mark_initialized();
    const Status refused = Loader::open(o).status();
    const bool named = refused.message().find("mark_initialized") != std::string::npos;
    ::_exit(clean_start && !refused.ok() && named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "a clean process forks; after mark_initialized() fork_hazard=error refuses, naming it";
}

}  // namespace
}  // namespace forkfeed
