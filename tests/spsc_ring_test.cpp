// SpscRing: order, bounds, and correctness between two processes over shared memory.
#include "transport/spsc_ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>

#include <new>

namespace forkfeed {
namespace {

TEST(SpscRing, FifoAndBounded) {
  SpscRing<int, 4> ring;
  EXPECT_FALSE(ring.try_pop().has_value());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.try_push(i));
  EXPECT_FALSE(ring.try_push(99)) << "a full ring must refuse, not overwrite";
  EXPECT_EQ(ring.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ring.try_pop(), i);
  EXPECT_FALSE(ring.try_pop().has_value());
  // Wraps around many times.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(ring.try_push(i));
    ASSERT_EQ(ring.try_pop(), i);
  }
}

TEST(SpscRing, BetweenProcessesEveryItemOnceInOrder) {
  using Ring = SpscRing<std::uint64_t, 64>;
  void* mem = ::mmap(nullptr, sizeof(Ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* ring = new (mem) Ring();
  constexpr std::uint64_t kItems = 50'000;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (std::uint64_t i = 0; i < kItems;) {
      if (ring->try_push(i)) {
        ++i;
      } else {
        ::sched_yield();  // two cores may be all there is: let the consumer run
      }
    }
    ::_exit(0);
  }
  std::uint64_t expected = 0;
  while (expected < kItems) {
    if (auto v = ring->try_pop()) {
      ASSERT_EQ(*v, expected);
      ++expected;
    } else {
      ::sched_yield();
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(ring->try_pop().has_value());
  ::munmap(mem, sizeof(Ring));
}

}  // namespace
}  // namespace forkfeed
