// FairShare, the policy by which a pool's worker picks the loader it serves next, on its
// own with made-up sample times: equal shares of worker time (not of tasks), weights,
// turns of a slice between samples, a bounded credit kept while without work, a newcomer
// level with the others, and the time other workers spend on a loader counted too.
#include "workers/fair_share.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>
#include <vector>

namespace forkfeed {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

// One worker's FairShare and the worker time the pool spent on each loader.
struct Pool {
  FairShare share;
  std::map<std::uint64_t, std::uint64_t> served;

  std::optional<std::uint64_t> next(const std::set<std::uint64_t>& has_work) {
    return share.next([&](std::uint64_t id) { return has_work.contains(id); },
                      [&](std::uint64_t id) { return served[id]; });
  }
};

// Asks `n` times, each pick taking `cost` of the worker's time for the loader chosen;
// `has_work` says who has a task. Returns the loaders chosen, in order.
std::vector<std::uint64_t> picks(Pool& pool, int n, const std::map<std::uint64_t, std::uint64_t>& cost,
                                 const std::set<std::uint64_t>& has_work) {
  std::vector<std::uint64_t> chosen;
  for (int i = 0; i < n; ++i) {
    const auto next = pool.next(has_work);
    if (!next) break;
    chosen.push_back(*next);
    pool.served[*next] += cost.at(*next);
  }
  return chosen;
}

std::map<std::uint64_t, int> count(const std::vector<std::uint64_t>& chosen) {
  std::map<std::uint64_t, int> served;
  for (std::uint64_t id : chosen) ++served[id];
  return served;
}

// How many times in a row `id` was chosen from the start of `chosen`.
int run_of(const std::vector<std::uint64_t>& chosen, std::uint64_t id) {
  int n = 0;
  while (n < static_cast<int>(chosen.size()) && chosen[n] == id) ++n;
  return n;
}

TEST(FairShare, LoadersWithWorkGetEqualWorkerTimeNotEqualTasks) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 1);
  // Loader 2's samples take twice as long: it gets half as many.
  const auto served = count(picks(pool, 3000, {{1, 1 * kMs}, {2, 2 * kMs}}, {1, 2}));
  EXPECT_NEAR(served.at(1), 2000, 10);
  EXPECT_NEAR(served.at(2), 1000, 10);
}

TEST(FairShare, AWeightIsAMultipleOfTheShare) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 3);
  const auto served = count(picks(pool, 4000, {{1, 1 * kMs}, {2, 1 * kMs}}, {1, 2}));
  EXPECT_NEAR(served.at(1), 1000, 10);
  EXPECT_NEAR(served.at(2), 3000, 10);
}

TEST(FairShare, TheLoaderInHandKeepsTheWorkerForASliceThenGivesWay) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 1);
  const auto chosen = picks(pool, 200, {{1, 1 * kMs}, {2, 1 * kMs}}, {1, 2});
  // Turns of about a slice (10 ms of 1 ms samples), not one sample each, and never longer.
  std::size_t longest = 0;
  std::size_t turns = 0;
  for (std::size_t i = 0, run = 0; i < chosen.size(); ++i) {
    run = i > 0 && chosen[i] == chosen[i - 1] ? run + 1 : 1;
    longest = std::max(longest, run);
    if (i == 0 || chosen[i] != chosen[i - 1]) ++turns;
  }
  EXPECT_LE(longest, 12u) << "one loader kept the worker for more than a slice";
  EXPECT_LE(turns, 25u) << "the worker switched loaders on almost every sample";
}

TEST(FairShare, ALoaderMomentarilyWithoutWorkKeepsWhatItIsOwed) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 1);
  // Loader 2's queue is empty for 40 samples of loader 1 (its few slots in its trainer's
  // hands), a moment shorter than the lag.
  EXPECT_EQ(count(picks(pool, 40, {{1, 1 * kMs}, {2, 1 * kMs}}, {1})),
            (std::map<std::uint64_t, int>{{1, 40}}));
  // Back with work, it is served until it has had its 40 ms (give or take a slice).
  const auto chosen = picks(pool, 100, {{1, 1 * kMs}, {2, 1 * kMs}}, {1, 2});
  EXPECT_GE(run_of(chosen, 2), 30) << "its deficit was forgotten while its queue was empty";
  EXPECT_LE(run_of(chosen, 2), 50);
  EXPECT_NEAR(count(chosen).at(2), 70, 6) << "over the whole run each got half";
}

TEST(FairShare, ALoaderBackFromALongPauseTakesTheWorkerForAtMostTheLag) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 1);
  // Loader 2 has nothing to do for 2 s (a trainer evaluating, say): that share went to 1.
  EXPECT_EQ(count(picks(pool, 2000, {{1, 1 * kMs}, {2, 1 * kMs}}, {1})),
            (std::map<std::uint64_t, int>{{1, 2000}}));
  const auto chosen = picks(pool, 400, {{1, 1 * kMs}, {2, 1 * kMs}}, {1, 2});
  const int burst = run_of(chosen, 2);
  EXPECT_GE(burst, 100) << "it kept no credit at all";
  EXPECT_LE(burst, 111) << "it banked the whole pause: loader 1 would wait 2 s";
  // Then they take turns.
  const auto served = count(std::vector<std::uint64_t>(chosen.begin() + burst, chosen.end()));
  EXPECT_NEAR(served.at(1), served.at(2), 12);
}

TEST(FairShare, ALoaderWithoutWorkNeverHoldsTheWorker) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 1);
  EXPECT_EQ(count(picks(pool, 5, {{1, 1 * kMs}, {2, 1 * kMs}}, {2})), (std::map<std::uint64_t, int>{{2, 5}}));
  EXPECT_EQ(count(picks(pool, 5, {{1, 1 * kMs}, {2, 1 * kMs}}, {1})), (std::map<std::uint64_t, int>{{1, 5}}))
      << "the loader in hand ran out of work: the worker goes to the other at once";
  EXPECT_FALSE(pool.next({}).has_value()) << "nobody has work";
}

TEST(FairShare, ALoaderThatAttachesLaterStartsLevelAndOneThatLeavesIsForgotten) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  (void)picks(pool, 1000, {{1, 1 * kMs}}, {1});
  share.add(2, 1);
  const auto served = count(picks(pool, 1000, {{1, 1 * kMs}, {2, 1 * kMs}}, {1, 2}));
  EXPECT_NEAR(served.at(1), 500, 11) << "the newcomer took the worker for the time the first had had";
  EXPECT_NEAR(served.at(2), 500, 11);
  share.remove(1);
  EXPECT_EQ(count(picks(pool, 3, {{1, 1 * kMs}, {2, 1 * kMs}}, {1, 2})),
            (std::map<std::uint64_t, int>{{2, 3}}));
}

// Two workers, each with a task of both loaders: while the other worker is in loader 1's
// long samples (its time counts as it goes), this one keeps to loader 2 — the workers
// split between the loaders instead of both taking loader 1's turn at once.
TEST(FairShare, TimeTheOtherWorkersSpendOnALoaderCountsHere) {
  Pool pool;
  pool.share.add(1, 1);
  pool.share.add(2, 1);
  std::map<std::uint64_t, int> here;
  for (int ms = 0; ms < 1000; ++ms) {
    pool.served[1] += kMs;  // the other worker, all the while in loader 1's samples
    const auto next = pool.next({1, 2});
    ASSERT_TRUE(next.has_value());
    ++here[*next];
    pool.served[*next] += kMs;
  }
  EXPECT_GE(here[2], 990)
      << "this worker took loader 1's turn too, though the other worker was giving it one";
}

// A worker that asks between samples, as workers/worker_loop.cpp does, serves a loader of
// 750-sample tasks that always has one and a loader of 4-sample tasks whose next task
// comes 6 ms after the last one ended (its trainer's round trip): the small one asks for
// 4 ms of every 10 and gets it, in every second — the share it leaves while its queue is
// empty is not forgotten, or it would get 4 of every 14.
TEST(FairShare, AskedBetweenSamplesUnequalTasksGetEqualSharesOverEverySecond) {
  Pool pool;
  FairShare& share = pool.share;
  share.add(1, 1);
  share.add(2, 1);
  std::uint64_t now = 0;
  std::uint32_t left_big = 750, left_small = 4;
  std::uint64_t small_ready = 0;  // when loader 2's next task is in its queue
  std::map<std::uint64_t, std::uint64_t> window;
  for (int second = 0; second < 10; ++second) {
    window.clear();
    const std::uint64_t end = now + 1000 * kMs;
    while (now < end) {
      const auto next =
          pool.next(now >= small_ready ? std::set<std::uint64_t>{1, 2} : std::set<std::uint64_t>{1});
      ASSERT_TRUE(next.has_value());
      pool.served[*next] += kMs;
      window[*next] += kMs;
      now += kMs;
      if (*next == 1 && --left_big == 0) left_big = 750;
      if (*next == 2 && --left_small == 0) {
        left_small = 4;
        small_ready = now + 6 * kMs;
      }
    }
    const double small = static_cast<double>(window[2]) / static_cast<double>(window[1] + window[2]);
    EXPECT_GE(small, 0.35) << "second " << second;
    EXPECT_LE(small, 0.65) << "second " << second;
  }
}

}  // namespace
}  // namespace forkfeed
