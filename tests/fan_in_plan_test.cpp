// FanInPlan, the rules of a fan-in without a process: batches go by credit, come back in
// order exactly once, a lost daemon's go to the others, an overdue daemon's are asked of
// the others too and its late copies are dropped, the last free slot is kept for the
// batch the pass waits for — and over thousands of random arrivals, losses and stalls,
// the pass is handed out whole, in order, once.
#include "client/fan_in_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace forkfeed {
namespace {

using Clock = FanInPlan::Clock;
using namespace std::chrono_literals;

// The plan of `daemons` daemons, all up, over batches [0, batches).
FanInPlan plan_of(std::uint32_t daemons, std::uint64_t batches) {
  FanInPlan plan;
  for (std::uint32_t d = 0; d < daemons; ++d) plan.up(plan.add_daemon());
  plan.start(0, batches);
  return plan;
}

std::map<std::uint32_t, std::vector<std::uint64_t>> by_daemon(const std::vector<FanInPlan::Want>& wants) {
  std::map<std::uint32_t, std::vector<std::uint64_t>> out;
  for (const auto& w : wants) out[w.daemon] = w.batches;
  return out;
}

TEST(FanInPlanTest, BatchesGoByCreditInOrderAndComeBackInOrderOnce) {
  FanInPlan plan = plan_of(2, 10);
  const Clock::time_point t0 = Clock::now();
  auto wants = by_daemon(plan.assign([](std::uint32_t) { return 4u; }, t0));
  // Turn about while both have room; each keeps its last slot for the awaited batch.
  EXPECT_EQ(wants[0], (std::vector<std::uint64_t>{0, 2, 4}));
  EXPECT_EQ(wants[1], (std::vector<std::uint64_t>{1, 3, 5}));
  EXPECT_TRUE(plan.arrived(1, 1, t0).first);
  EXPECT_FALSE(plan.head_arrived()) << "batch 0 has not come";
  EXPECT_TRUE(plan.arrived(0, 0, t0 + 5ms).first);
  EXPECT_EQ(plan.arrived(0, 2, t0 + 7ms).waited, 7ms);
  for (std::uint64_t want : {0u, 1u, 2u}) {
    ASSERT_TRUE(plan.head_arrived());
    EXPECT_EQ(plan.head(), want);
    plan.handed_out();
  }
  EXPECT_FALSE(plan.head_arrived());
  EXPECT_FALSE(plan.arrived(0, 1, t0).first) << "batch 1 was never wanted of daemon 0";
}

TEST(FanInPlanTest, ASlowDaemonGetsOnlyWhatItHasRoomFor) {
  FanInPlan plan = plan_of(2, 20);
  // Daemon 1 has filled its slots but one: it gets only the batch the pass waits for.
  auto wants = by_daemon(plan.assign([](std::uint32_t d) { return d == 0 ? 6u : 1u; }, Clock::now()));
  EXPECT_EQ(wants[0], (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(wants.contains(1)) << "batch 0 went to daemon 0, which had more room";
  FanInPlan waiting = plan_of(2, 20);
  wants = by_daemon(waiting.assign([](std::uint32_t d) { return d == 0 ? 0u : 1u; }, Clock::now()));
  EXPECT_EQ(wants[1], (std::vector<std::uint64_t>{0})) << "the last slot is for the awaited batch";
}

TEST(FanInPlanTest, ALostDaemonsBatchesGoToTheOthersAndItsArrivalsStay) {
  FanInPlan plan = plan_of(2, 8);
  const Clock::time_point t0 = Clock::now();
  auto wants = by_daemon(plan.assign([](std::uint32_t) { return 3u; }, t0));
  ASSERT_EQ(wants[0], (std::vector<std::uint64_t>{0, 2}));
  ASSERT_EQ(wants[1], (std::vector<std::uint64_t>{1, 3}));
  EXPECT_TRUE(plan.arrived(0, 2, t0).first);
  EXPECT_EQ(plan.lost(0), 1u) << "batch 0 goes back; batch 2 came already";
  EXPECT_FALSE(plan.is_up(0));
  // Daemon 1 now has one free slot: the batch the pass waits for, 0, takes it.
  wants = by_daemon(plan.assign([](std::uint32_t d) { return d == 1 ? 3u : 0u; }, t0));
  EXPECT_EQ(wants[1], (std::vector<std::uint64_t>{0}));
  EXPECT_FALSE(plan.arrived(0, 0, t0).first) << "nothing is wanted of a lost daemon";
}

TEST(FanInPlanTest, AnOverdueDaemonsBatchesAreAskedOfTheOthersAndTheLateCopyIsDropped) {
  FanInPlan plan = plan_of(2, 6);
  const Clock::time_point t0 = Clock::now();
  (void)plan.assign([](std::uint32_t) { return 3u; }, t0);  // 0, 2 to daemon 0; 1, 3 to daemon 1
  EXPECT_TRUE(plan.arrived(1, 1, t0 + 100ms).first);
  EXPECT_EQ(plan.next_overdue(1s), t0 + 1s) << "daemon 0 has been busy since t0";
  EXPECT_TRUE(plan.stall_overdue(t0 + 900ms, 1s).empty());
  const auto stalls = plan.stall_overdue(t0 + 1s, 1s);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].daemon, 0u);
  EXPECT_EQ(stalls[0].taken, 2u);
  EXPECT_TRUE(plan.stalled(0));
  // Daemon 1 (1 slot holding batch 1, 3 wanted: room 1) takes the awaited batch 0 first.
  auto wants = by_daemon(plan.assign([](std::uint32_t d) { return d == 1 ? 3u : 0u; }, t0 + 1s));
  EXPECT_EQ(wants[1], (std::vector<std::uint64_t>{0}));
  EXPECT_FALSE(wants.contains(0)) << "a stalled daemon gets nothing new";
  EXPECT_TRUE(plan.arrived(1, 0, t0 + 1100ms).first);
  EXPECT_FALSE(plan.arrived(0, 0, t0 + 1200ms).first) << "the stalled daemon's late copy";
  EXPECT_FALSE(plan.stalled(0)) << "it delivers again";
}

// Random arrivals, losses, returns and stalls over K daemons of S slots: the pass comes
// out whole, in order, each batch once, and never stops while a daemon is up.
TEST(FanInPlanTest, RandomLossesAndStallsNeverLoseRepeatOrStopThePass) {
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t k = 1 + seed % 3, slots = 2 + seed % 4;
    const std::uint64_t batches = 40;
    FanInPlan plan = plan_of(k, batches);
    std::vector<std::uint32_t> in_slots(k, 0);
    std::map<std::uint64_t, std::uint32_t> carrier;  // arrived, not handed out: in whose slot
    std::vector<std::uint64_t> handed;
    Clock::time_point now = Clock::now();
    for (int step = 0; step < 20000 && handed.size() < batches; ++step) {
      now += 10ms;
      (void)plan.stall_overdue(now, 500ms);
      (void)plan.assign([&](std::uint32_t d) { return slots - in_slots[d]; }, now);
      while (plan.head_arrived()) {
        in_slots[carrier[plan.head()]] -= 1;
        carrier.erase(plan.head());
        handed.push_back(plan.head());
        plan.handed_out();
      }
      const std::uint32_t d = rng() % k;
      const int event = static_cast<int>(rng() % 100);
      if (event < 2 && plan.is_up(d) && k > 1) {
        (void)plan.lost(d);
      } else if (event < 6 && !plan.is_up(d)) {
        plan.up(d);
      } else if (event < 10) {
        now += 600ms;  // everyone looks overdue
      } else if (plan.is_up(d) && plan.outstanding(d) > 0 && in_slots[d] < slots) {
        // One of its wanted batches arrives (a copy another daemon brought first is
        // dropped on the way); which one is up to the daemon.
        const std::uint64_t first = rng() % batches;
        for (std::uint64_t n = 0; n < batches; ++n) {
          const std::uint64_t index = (first + n) % batches;
          if (plan.arrived(d, index, now).first) {
            in_slots[d] += 1;
            carrier[index] = d;
            break;
          }
        }
      }
      bool any_up = false;
      for (std::uint32_t i = 0; i < k; ++i) any_up = any_up || plan.is_up(i);
      if (!any_up) plan.up(d);
    }
    std::vector<std::uint64_t> want(batches);
    for (std::uint64_t i = 0; i < batches; ++i) want[i] = i;
    ASSERT_EQ(handed, want) << "seed " << seed << ": " << k << " daemons of " << slots << " slots";
  }
}

}  // namespace
}  // namespace forkfeed
