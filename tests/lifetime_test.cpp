// Invariant 7: nothing outlives the loader — no child process, no fd, also after an
// early break; workers die with their parent; a dead worker is an error, not a hang. And
// a loader belongs to the process that opened it: a forked child can neither use it nor,
// by destroying its copy, stop the parent's workers.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "forkfeed/loader.h"
#include "testing/processes.h"
#include "testing/temp_dataset.h"

namespace forkfeed {
namespace {

// Pids whose parent is `parent`, from /proc (zombies included: they are not reaped).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...; comm may hold spaces, so parse after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

int open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  return line.substr(line.rfind(')') + 2, 1) != "Z";
}

class LifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = testing::make_image_folder(dir_.path(), 40, 2); }
  LoaderOptions options(std::uint32_t workers = 3) const {
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = workers;
    o.batch_size = 4;
    o.size = 16;
    o.log_level = "error";
    return o;
  }
  testing::TempDir dir_;
  std::string root_;
};

TEST_F(LifetimeTest, DestroyingTheLoaderReapsEveryWorkerAndClosesEveryFd) {
  const int fds = open_fds();
  {
    auto loader = Loader::open(options()).value_or_throw();
    EXPECT_EQ(children_of(::getpid()).size(), 3u);
    for (Batch& b : *loader) (void)b;
  }
  EXPECT_TRUE(children_of(::getpid()).empty()) << "no worker or zombie left";
  EXPECT_EQ(open_fds(), fds) << "no fd left open";
}

TEST_F(LifetimeTest, EarlyBreakMidEpochLeavesNothingBehind) {
  const int fds = open_fds();
  {
    auto loader = Loader::open(options()).value_or_throw();
    int n = 0;
    for (Batch& b : *loader) {
      (void)b;
      if (++n == 2) break;  // tasks are still in flight
    }
  }
  EXPECT_TRUE(children_of(::getpid()).empty());
  EXPECT_EQ(open_fds(), fds);
}

TEST_F(LifetimeTest, ABatchOutlivingItsLoaderStaysReadable) {
  Batch kept;
  std::vector<std::uint8_t> copy;
  {
    auto loader = Loader::open(options(1)).value_or_throw();
    auto b = loader->next().value_or_throw();
    kept = std::move(*b);
    const auto* p = static_cast<const std::uint8_t*>(kept.data());
    copy.assign(p, p + kept.bytes());
  }
  const auto* p = static_cast<const std::uint8_t*>(kept.data());
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), p));
  kept.release();
  EXPECT_TRUE(kept.empty());
}

TEST_F(LifetimeTest, KilledWorkersAreReplacedAndTheEpochIsStillExactlyOnce) {
  auto loader = Loader::open(options(2)).value_or_throw();
  std::multiset<std::uint64_t> seen;
  int batches = 0;
  for (Batch& b : *loader) {
    seen.insert(b.sample_indices().begin(), b.sample_indices().end());
    if (++batches % 3 == 1) {
      for (pid_t pid : children_of(::getpid())) ::kill(pid, SIGKILL);
    }
  }
  ASSERT_EQ(seen.size(), 40u);
  for (std::uint64_t i = 0; i < 40; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
  EXPECT_GE(loader->stats().worker_restarts, 2u);
  EXPECT_EQ(children_of(::getpid()).size(), 2u) << "replacements run; the dead were reaped";
}

TEST_F(LifetimeTest, PastMaxWorkerRestartsTheErrorSaysWhy) {
  LoaderOptions o = options(2);
  o.max_worker_restarts = 0;
  auto loader = Loader::open(o).value_or_throw();
  ASSERT_TRUE(loader->next().ok());
  for (pid_t pid : children_of(::getpid())) ::kill(pid, SIGKILL);
  Status failure;
  for (int i = 0; i < 20 && failure.ok(); ++i) {
    auto b = loader->next();
    if (!b.ok()) failure = b.status();
  }
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), Status::Code::kWorkerDied);
  EXPECT_NE(failure.message().find("SIGKILL"), std::string::npos) << failure.message();
  EXPECT_NE(failure.message().find("max_worker_restarts"), std::string::npos) << failure.message();
}

TEST_F(LifetimeTest, ALoaderMadeOnAThreadThatEndsKeepsItsWorkers) {
  // PR_SET_PDEATHSIG follows the forking thread, not the process.
  std::unique_ptr<Loader> loader;
  std::thread([&] { loader = Loader::open(options(2)).value_or_throw(); }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int samples = 0;
  for (Batch& b : *loader) samples += static_cast<int>(b.size());
  EXPECT_EQ(samples, 40);
}

TEST_F(LifetimeTest, WorkersHoldNoneOfTheParentsFds) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  auto loader = Loader::open(options(2)).value_or_throw();
  ::close(pipefd[1]);
  char c;
  EXPECT_EQ(::read(pipefd[0], &c, 1), 0) << "EOF: no worker kept the write end";
  ::close(pipefd[0]);
}

TEST_F(LifetimeTest, WorkersDieWithTheirParent) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t trainer = ::fork();
  ASSERT_GE(trainer, 0);
  if (trainer == 0) {  // a trainer process that opens a loader, then hangs
    auto loader = Loader::open(options(2));
    if (!loader.ok()) ::_exit(1);
    for (pid_t w : children_of(::getpid())) (void)!::write(pipefd[1], &w, sizeof w);
    ::close(pipefd[1]);
    ::pause();
    ::_exit(0);
  }
  ::close(pipefd[1]);
  // Read exactly two pids: the workers inherited the write end too, so no EOF comes.
  std::vector<pid_t> workers;
  pid_t w;
  while (workers.size() < 2 && ::read(pipefd[0], &w, sizeof w) == sizeof w) workers.push_back(w);
  ::close(pipefd[0]);
  ASSERT_EQ(workers.size(), 2u);
  ::kill(trainer, SIGKILL);  // no destructor runs
  ::waitpid(trainer, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t pid : workers) {
    while (alive(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_FALSE(alive(pid)) << "worker " << pid << " outlived its trainer";
  }
}

// A trainer that forks (an evaluation helper, a launcher) while it holds a Loader: in the
// child every call that would act on the workers fails, naming both processes; the child
// destroying its copy and exiting through exit() (atexit handlers, static destructors)
// stops nothing of the parent's, which reads its whole pass exactly once.
TEST_F(LifetimeTest, AForkedChildCannotUseOrStopItsParentsLoader) {
  testing::HangGuard guard(60, "LifetimeTest.AForkedChild");
  auto loader = Loader::open(options(2)).value_or_throw();
  testing::Batches run = testing::read_batches(*loader, 2);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto next = loader->next();
    if (next.ok() || next.status().code() != Status::Code::kFailedPrecondition) ::_exit(1);
    const std::string said = next.status().message();
    if (said.find("opened by process " + std::to_string(parent)) == std::string::npos) ::_exit(2);
    if (loader->set_epoch(4).ok() || loader->reset().ok() || loader->load_state(loader->state()).ok())
      ::_exit(3);
    if (loader->check_process().ok()) ::_exit(4);
    loader.reset();  // its destructor, in the child
    std::exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0) << "1: next() did not fail as it should; 2: it did not name the parent; "
                                       "3: another call worked; 4: check_process() was Ok";
  EXPECT_TRUE(loader->check_process().ok());
  const testing::Batches rest = testing::read_pass(*loader);
  run.insert(run.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::exactly_once(testing::indices_of(run), 40), "");
  EXPECT_EQ(loader->stats().worker_restarts, 0u) << "no worker of the parent's was stopped";
}

}  // namespace
}  // namespace forkfeed
