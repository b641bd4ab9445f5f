// ChildProcess and ExitInfo on their own: what a forked child runs and inherits, how its
// end is reported, and that every owner reaps exactly once (no zombie, no orphan).
//
// Over 300 lines on purpose: one case per promise of ChildProcess (exit, signal, fds,
// moves, reaping), each checking for zombies the same way; splitting it would copy the
// fixture.
#include "process/child_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/testing/processes.h"

namespace forkfeed {
namespace {

using namespace std::chrono_literals;

// Generous: a child on a loaded 2-core machine may take a while to be scheduled.
constexpr auto kExitWithin = 10s;

// True once `pid` is neither running nor a zombie of ours: reaped, nothing left to wait for.
bool reaped_and_gone(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) < 0 && errno == ECHILD && testing::process_state(pid) == 0;
}

// A pipe whose write end this process holds: a child given the read end blocks until the
// write end is closed, so the test decides when it exits without any sleep.
class Gate {
 public:
  Gate() {
    int ends[2];
    EXPECT_EQ(::pipe2(ends, O_CLOEXEC), 0);
    read_.reset(ends[0]);
    write_.reset(ends[1]);
  }
  int read_end() const { return read_.get(); }
  void open() { write_.reset(); }
  // The body of a child that waits for open(), then exits 0.
  std::function<int()> waiter() const {
    const int fd = read_.get();
    return [fd] {
      char c;
      while (::read(fd, &c, 1) < 0 && errno == EINTR) {
      }
      return 0;
    };
  }

 private:
  UniqueFd read_, write_;
};

// A child that waits for `gate` to open.
ChildProcess waiting_child(const Gate& gate) {
  const int keep[] = {gate.read_end()};
  auto child = ChildProcess::fork(gate.waiter(), keep);
  EXPECT_TRUE(child.ok()) << child.status().message();
  return child.ok() ? std::move(child).value() : ChildProcess();
}

// POLLIN if `fd` becomes readable within `timeout`, else 0.
short readable_within(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return 0;
  return static_cast<short>(p.revents & POLLIN);
}

class ChildProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::children_of(::getpid()).empty()) << "a child left by another test";
  }
  void TearDown() override {
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a child outlived its ChildProcess";
  }
  testing::HangGuard guard_{60, "ChildProcessTest: a wait that should have ended"};
};

TEST_F(ChildProcessTest, ForkRunsTheBodyAndExitsWithItsResult) {
  auto child = ChildProcess::fork([] { return 3; });
  ASSERT_TRUE(child.ok()) << child.status().message();
  EXPECT_GT(child->pid(), 0);
  EXPECT_NE(child->pid(), ::getpid());
  const std::optional<ExitInfo> exit = child->wait_for(kExitWithin);
  ASSERT_TRUE(exit.has_value()) << "the child did not exit";
  EXPECT_EQ(exit->code, 3);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_FALSE(exit->crashed());
  EXPECT_EQ(exit->describe(), "exited with code 3");
  EXPECT_TRUE(child->reaped());
}

TEST_F(ChildProcessTest, ABodyThatThrowsExitsWithCode2InsteadOfUnwindingIntoTheParent) {
  const pid_t parent = ::getpid();
  auto child = ChildProcess::fork([]() -> int { throw std::runtime_error("in the child"); });
  ASSERT_EQ(::getpid(), parent) << "the child unwound into the test";
  ASSERT_TRUE(child.ok()) << child.status().message();
  const std::optional<ExitInfo> exit = child->wait_for(kExitWithin);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 2);
  EXPECT_EQ(exit->signal, 0);
}

// No core files: a crash on purpose need not be dumped.
void crash_quietly(int signal) {
  const rlimit none{0, 0};
  ::setrlimit(RLIMIT_CORE, &none);
  if (signal == SIGABRT) ::abort();
  ::raise(signal);
}

TEST_F(ChildProcessTest, ABodyThatCrashesEndsWithItsSignalAndCountsAsACrash) {
  for (int signal : {SIGSEGV, SIGABRT}) {
    SCOPED_TRACE(sigabbrev_np(signal));
    auto child = ChildProcess::fork([signal] {
      crash_quietly(signal);
      return 0;
    });
    ASSERT_TRUE(child.ok()) << child.status().message();
    const std::optional<ExitInfo> exit = child->wait_for(kExitWithin);
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->signal, signal);
    EXPECT_TRUE(exit->crashed());
    EXPECT_EQ(exit->describe().rfind(std::string("killed by SIG") + sigabbrev_np(signal), 0), 0u)
        << exit->describe();
  }
}

TEST_F(ChildProcessTest, DescribeNamesTheCodeOrTheSignalAndItsLikelyCause) {
  EXPECT_EQ((ExitInfo{3, 0}).describe(), "exited with code 3");
  EXPECT_EQ((ExitInfo{0, 0}).describe(), "exited with code 0");
  EXPECT_EQ((ExitInfo{0, SIGKILL}).describe(), "killed by SIGKILL (the OOM killer is a likely cause)");
  EXPECT_EQ((ExitInfo{0, SIGSEGV}).describe(), "killed by SIGSEGV (a crash, possibly in an image codec)");
  EXPECT_EQ((ExitInfo{0, SIGBUS}).describe().rfind("killed by SIGBUS (a fault on shared memory", 0), 0u);
  EXPECT_EQ((ExitInfo{0, SIGTERM}).describe(), "killed by SIGTERM");
}

TEST_F(ChildProcessTest, OnlyFaultsOfItsOwnCodeAreCrashes) {
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    EXPECT_TRUE((ExitInfo{0, signal}).crashed()) << sigabbrev_np(signal);
  }
  for (int signal : {SIGKILL, SIGTERM, SIGINT, SIGPIPE}) {
    EXPECT_FALSE((ExitInfo{0, signal}).crashed()) << sigabbrev_np(signal);
  }
  EXPECT_FALSE((ExitInfo{139, 0}).crashed()) << "an exit code is no signal";
}

TEST_F(ChildProcessTest, PollNeverBlocksOnARunningChildAndReapsAnExitedOneOnce) {
  Gate gate;
  ChildProcess child = waiting_child(gate);
  ASSERT_GT(child.pid(), 0);
  // A poll() that blocked would hang here until the HangGuard ends the test.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(child.poll().has_value());
  EXPECT_FALSE(child.reaped());
  EXPECT_TRUE(testing::alive(child.pid()));
  gate.open();
  ASSERT_EQ(readable_within(child.pidfd(), kExitWithin), POLLIN) << "the child did not exit";
  const std::optional<ExitInfo> exit = child.poll();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_TRUE(child.reaped());
  EXPECT_TRUE(reaped_and_gone(child.pid()));
  // Asked again, it answers from what it recorded: nothing left to reap.
  const std::optional<ExitInfo> again = child.poll();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->code, 0);
  EXPECT_EQ(again->signal, 0);
}

TEST_F(ChildProcessTest, WaitForARunningChildGivesUpAtTheTimeout) {
  Gate gate;
  ChildProcess child = waiting_child(gate);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(child.wait_for(100ms).has_value());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 50ms) << "it gave up before the timeout";
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(testing::alive(child.pid()));
  EXPECT_FALSE(child.reaped());
  gate.open();
  const std::optional<ExitInfo> exit = child.wait_for(kExitWithin);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
}

TEST_F(ChildProcessTest, TheDestructorKillsAndReapsARunningChild) {
  Gate gate;  // never opened: only a kill ends the child
  pid_t pid = -1;
  {
    ChildProcess child = waiting_child(gate);
    pid = child.pid();
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(testing::alive(pid));
  }
  EXPECT_TRUE(reaped_and_gone(pid)) << "state '" << testing::process_state(pid) << "'";
}

TEST_F(ChildProcessTest, KillAndReapReportsSigkillAndIsIdempotent) {
  Gate gate;
  ChildProcess child = waiting_child(gate);
  child.kill_and_reap();
  EXPECT_TRUE(child.reaped());
  EXPECT_TRUE(reaped_and_gone(child.pid()));
  ASSERT_TRUE(child.poll().has_value());
  EXPECT_EQ(child.poll()->signal, SIGKILL);
  child.kill_and_reap();  // nothing left to kill: no signal to a pid that may be reused
  EXPECT_EQ(child.poll()->signal, SIGKILL);
}

TEST_F(ChildProcessTest, MoveConstructionTransfersOwnership) {
  Gate gate;
  std::optional<ChildProcess> owner;
  pid_t pid = -1;
  {
    ChildProcess first = waiting_child(gate);
    pid = first.pid();
    owner.emplace(std::move(first));
    EXPECT_EQ(first.pid(), -1);
    EXPECT_EQ(first.pidfd(), -1);
  }  // the moved-from one is destroyed: the child is not its to kill
  EXPECT_EQ(owner->pid(), pid);
  EXPECT_TRUE(testing::alive(pid)) << "the moved-from destructor killed the child";
  EXPECT_FALSE(owner->poll().has_value());
  gate.open();
  ASSERT_EQ(readable_within(owner->pidfd(), kExitWithin), POLLIN)
      << "the new owner's pidfd does not watch the child";
  const std::optional<ExitInfo> exit = owner->poll();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
}

TEST_F(ChildProcessTest, MoveAssignmentOverARunningChildReapsTheOldOne) {
  Gate old_gate, new_gate;
  ChildProcess target = waiting_child(old_gate);
  ChildProcess source = waiting_child(new_gate);
  const pid_t old_pid = target.pid(), new_pid = source.pid();
  target = std::move(source);
  EXPECT_TRUE(reaped_and_gone(old_pid))
      << "the child assigned over was left behind (state '" << testing::process_state(old_pid) << "')";
  EXPECT_EQ(target.pid(), new_pid);
  EXPECT_EQ(source.pid(), -1);
  EXPECT_TRUE(testing::alive(new_pid));
  EXPECT_FALSE(target.reaped());
  new_gate.open();
  const std::optional<ExitInfo> exit = target.wait_for(kExitWithin);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
}

TEST_F(ChildProcessTest, TheChildKeepsTheListedFdsAndNoOtherAboveStderr) {
  const UniqueFd kept(::open("/dev/null", O_RDONLY));  // not close-on-exec: fork alone must close it
  const UniqueFd unlisted(::open("/dev/null", O_RDONLY));
  ASSERT_TRUE(kept.valid());
  ASSERT_TRUE(unlisted.valid());
  const int keep[] = {kept.get()};
  auto child = ChildProcess::fork(
      [kept = kept.get(), unlisted = unlisted.get()] {
        int code = 0;
        if (::fcntl(kept, F_GETFD) < 0) code |= 1;
        if (::fcntl(unlisted, F_GETFD) >= 0) code |= 2;
        for (int fd : {0, 1, 2}) {
          if (::fcntl(fd, F_GETFD) < 0) code |= 4;  // stdio is not ours to close
        }
        return code;
      },
      keep);
  ASSERT_TRUE(child.ok()) << child.status().message();
  const std::optional<ExitInfo> exit = child->wait_for(kExitWithin);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, 0);
  EXPECT_EQ(exit->code & 1, 0) << "the listed fd was closed";
  EXPECT_EQ(exit->code & 2, 0) << "an fd not listed survived";
  EXPECT_EQ(exit->code & 4, 0) << "stdin, stdout or stderr was closed";
  EXPECT_TRUE(kept.valid() && ::fcntl(kept.get(), F_GETFD) >= 0) << "the parent's fd was closed";
}

TEST_F(ChildProcessTest, TheChildIgnoresSigintAndHasNoneOfTheParentsHandlers) {
  struct sigaction handler {
  }, saved{};
  handler.sa_handler = [](int) {};
  ASSERT_EQ(::sigaction(SIGUSR1, &handler, &saved), 0);
  auto survives_sigint = ChildProcess::fork([] {
    ::raise(SIGINT);
    return 7;
  });
  auto default_usr1 = ChildProcess::fork([] {
    ::raise(SIGUSR1);
    return 7;
  });
  ::sigaction(SIGUSR1, &saved, nullptr);
  ASSERT_TRUE(survives_sigint.ok()) << survives_sigint.status().message();
  ASSERT_TRUE(default_usr1.ok()) << default_usr1.status().message();
  const std::optional<ExitInfo> after_sigint = survives_sigint->wait_for(kExitWithin);
  ASSERT_TRUE(after_sigint.has_value());
  EXPECT_EQ(after_sigint->signal, 0) << after_sigint->describe();
  EXPECT_EQ(after_sigint->code, 7);
  const std::optional<ExitInfo> after_usr1 = default_usr1->wait_for(kExitWithin);
  ASSERT_TRUE(after_usr1.has_value());
  EXPECT_EQ(after_usr1->signal, SIGUSR1)
      << "the parent's SIGUSR1 handler ran in the child: " << after_usr1->describe();
}

TEST_F(ChildProcessTest, ThePidfdBecomesReadableWhenTheChildExits) {
  Gate gate;
  ChildProcess child = waiting_child(gate);
  ASSERT_GE(child.pidfd(), 0);
  EXPECT_EQ(readable_within(child.pidfd(), 0ms), 0) << "readable while the child runs";
  gate.open();
  EXPECT_EQ(readable_within(child.pidfd(), kExitWithin), POLLIN);
  EXPECT_TRUE(child.poll().has_value()) << "readable but not reapable";
}

// posix_spawn()s `argv` and returns its pid, or -1.
pid_t spawn(std::initializer_list<const char*> args) {
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  EXPECT_EQ(err, 0) << std::strerror(err);
  return err == 0 ? pid : -1;
}

TEST_F(ChildProcessTest, AdoptTakesOwnershipOfASpawnedChild) {
  const pid_t exits = spawn({"/bin/sh", "-c", "exit 5"});
  ASSERT_GT(exits, 0);
  auto adopted = ChildProcess::adopt(exits);
  ASSERT_TRUE(adopted.ok()) << adopted.status().message();
  EXPECT_EQ(adopted->pid(), exits);
  ASSERT_EQ(readable_within(adopted->pidfd(), kExitWithin), POLLIN);
  const std::optional<ExitInfo> exit = adopted->poll();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 5);
  EXPECT_TRUE(reaped_and_gone(exits));

  const pid_t sleeps = spawn({"/bin/sleep", "600"});
  ASSERT_GT(sleeps, 0);
  {
    auto owner = ChildProcess::adopt(sleeps);
    ASSERT_TRUE(owner.ok()) << owner.status().message();
    EXPECT_FALSE(owner->poll().has_value());
  }
  EXPECT_TRUE(reaped_and_gone(sleeps)) << "an adopted child outlived its owner";
}

// Out of fds, pidfd_open fails with EMFILE: the message says so, and blames no kernel.
// The child it could not watch is killed and reaped, not left behind.
TEST_F(ChildProcessTest, APidfdThatCannotBeOpenedSaysWhyWithoutBlamingTheKernel) {
  const pid_t sleeps = spawn({"/bin/sleep", "600"});
  ASSERT_GT(sleeps, 0);
  Result<ChildProcess> adopted = Status::Internal("not adopted");
  {
    const testing::NoFreeFds no_fds;
    adopted = ChildProcess::adopt(sleeps);
  }
  ASSERT_FALSE(adopted.ok());
  EXPECT_NE(adopted.status().message().find("Too many open files"), std::string::npos)
      << adopted.status().message();
  EXPECT_EQ(adopted.status().message().find("Linux 5.3"), std::string::npos) << adopted.status().message();
  EXPECT_TRUE(reaped_and_gone(sleeps));
}

}  // namespace
}  // namespace forkfeed
