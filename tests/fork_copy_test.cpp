// ForkCopy: a child of fork() keeps what it held at the fork, however the parent goes
// on writing; what nobody holds, and what the library's own children get, stays shared.
#include "transport/fork_copy.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "transport/mapping.h"

namespace forkfeed {
namespace {

const std::size_t kPageSize = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
// The region: four parts of 64 pages each, big enough that a copy takes a while.
constexpr std::size_t kParts = 4;
const std::size_t kPart = 64 * kPageSize;

class ForkCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UniqueFd fd(::memfd_create("fork-copy-test", MFD_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(kParts * kPart)), 0);
    auto mapping = Mapping::map_shared(fd.get(), kParts * kPart);
    ASSERT_TRUE(mapping.ok()) << mapping.status().message();
    shared_ = std::move(mapping).value();
    std::memset(shared_.data(), 'a', kParts * kPart);
  }

  std::byte* part(std::size_t i) { return static_cast<std::byte*>(shared_.data()) + i * kPart; }

  // Forks; once fork() has returned, the parent runs `after_fork` (by default, writes 'b'
  // over the region) and then lets the child look. What the child saw: one letter a part
  // ('a', 'b', ..., or '?' when mixed).
  std::string parts_the_child_see(const std::function<void()>& after_fork = {}) {
    int go[2], seen[2];
    EXPECT_EQ(::pipe(go), 0);
    EXPECT_EQ(::pipe(seen), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      char byte;
      if (::read(go[0], &byte, 1) != 1) ::_exit(1);
      std::string letters;
      for (std::size_t i = 0; i < kParts; ++i) {
        const auto* p = reinterpret_cast<const char*>(part(i));
        const bool same = std::memcmp(p, p + 1, kPart - 1) == 0;
        letters += same ? p[0] : '?';
      }
      if (releasing_.load()) letters += '+';  // a release had begun before the fork
      ::_exit(::write(seen[1], letters.data(), letters.size()) == static_cast<ssize_t>(letters.size()) ? 0
                                                                                                       : 1);
    }
    ::close(go[0]);
    ::close(seen[1]);
    if (after_fork) {
      after_fork();
    } else {
      std::memset(shared_.data(), 'b', kParts * kPart);
    }
    EXPECT_EQ(::write(go[1], "x", 1), 1);
    ::close(go[1]);
    char letters[kParts + 1] = {};
    const ssize_t n = ::read(seen[0], letters, sizeof letters);
    ::close(seen[0]);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    return std::string(letters, n > 0 ? static_cast<std::size_t>(n) : 0);
  }

  Mapping shared_;
  std::atomic<bool> releasing_{false};
};

TEST_F(ForkCopyTest, AChildKeepsWhatWasHeldAtTheForkAndSharesTheRest) {
  EXPECT_EQ(parts_the_child_see(), "bbbb") << "nothing held: the child shares every page";
  std::memset(shared_.data(), 'a', kParts * kPart);
  // Not page aligned: the pages it touches are copied whole.
  const ForkCopy held(std::span(part(1) + 100, kPart - 100));
  EXPECT_EQ(parts_the_child_see(), "babb");
  std::memset(shared_.data(), 'a', kParts * kPart);
  const ForkCopy next(std::span(part(2) - 1, 2));
  EXPECT_EQ(parts_the_child_see(), "ba?b") << "part 2: only its first page is held";
}

// Memory registered for RDMA is not inherited at all (ibv_fork_init and UCX mark it
// MADV_DONTFORK): the child still gets what its parent held there, copied by the parent.
TEST_F(ForkCopyTest, AChildGetsWhatWasHeldInMemoryItDoesNotInherit) {
  ASSERT_EQ(::madvise(part(1), kPart, MADV_DONTFORK), 0);
  const ForkCopy held(std::span(part(1), kPart));
  EXPECT_EQ(parts_the_child_see(), "babb");
}

TEST_F(ForkCopyTest, OverlappingAndEmptyRangesAreCopiedAsOne) {
  const ForkCopy first(std::span(part(0), 2 * kPart));
  const ForkCopy overlapping(std::span(part(1), kPart + 1));
  const ForkCopy empty(std::span(part(3), 0));
  EXPECT_EQ(parts_the_child_see(), "aa?b") << "part 2: the page of its first byte is held";
}

TEST_F(ForkCopyTest, ARangeLetGoOfIsSharedAgain) {
  std::optional<ForkCopy> held(std::span(part(0), kPart));
  const ForkCopy kept(std::span(part(2), kPart));
  held.reset();
  EXPECT_EQ(parts_the_child_see(), "bbab");
}

TEST_F(ForkCopyTest, TheLibrarysOwnChildrenShare) {
  const ForkCopy held(std::span(part(0), kParts * kPart));
  {
    const ForkCopy::SharedScope shared;  // as ChildProcess::fork makes a worker
    EXPECT_EQ(parts_the_child_see(), "bbbb");
  }
  std::memset(shared_.data(), 'a', kParts * kPart);
  EXPECT_EQ(parts_the_child_see(), "aaaa");
}

// The parent copies inside fork(), holding every range: a thread that lets go of a range
// and writes into it at once (as a loader refills a released slot) cannot reach
// the child's copy, however the two race.
TEST_F(ForkCopyTest, ALetGoRacingTheForkNeverReachesTheChild) {
  for (int round = 0; round < 50; ++round) {
    std::memset(shared_.data(), 'a', kParts * kPart);
    releasing_ = false;
    auto held = std::make_unique<ForkCopy>(std::span(part(0), kParts * kPart));
    std::thread writer([&] {
      for (int spin = round * 1000; spin > 0; --spin)
        std::atomic_signal_fence(std::memory_order_seq_cst);  // meets the fork at different points
      releasing_ = true;
      held.reset();
      std::memset(shared_.data(), 'c', kParts * kPart);
    });
    const std::string seen = parts_the_child_see([&] { writer.join(); });
    // A release begun after the fork's copy waits for the fork: all 'a'. One begun
    // before may have let go first (the child shares, and sees the write) or not.
    EXPECT_TRUE(seen == "aaaa" || seen == "aaaa+" || seen == "cccc+") << seen << " in round " << round;
  }
}

}  // namespace
}  // namespace forkfeed
