// FanInPlan, the rules of a fan-in without a process: batches go by credit, come back in
// order exactly once, a lost daemon's go to the others, an overdue daemon's are asked of
// the others too and its late copies are dropped, the last free slot is kept for the
// batch the pass waits for — and over thousands of random arrivals, losses and stalls,
// the pass is handed out whole, in order, once.
#include "client/remote/fan_in_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
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

std::map<std::uint32_t, std::vector<std::uint64_t>> by_daemon(const FanInPlan::Assignment& assignment) {
  std::map<std::uint32_t, std::vector<std::uint64_t>> out;
  for (const auto& w : assignment.wants) out[w.daemon] = w.batches;
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
  EXPECT_EQ(plan.outstanding(0), 0u) << "a lost daemon holds nothing";
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

// Found from outside: one daemon alone was stalled ("asked of the other daemons") though
// there was no other to ask. It is overdue only while another delivers.
TEST(FanInPlanTest, ADaemonIsOverdueOnlyWhileAnotherDelivers) {
  FanInPlan plan;
  plan.up(plan.add_daemon());
  (void)plan.add_daemon();  // down
  plan.start(0, 6);
  const Clock::time_point t0 = Clock::now();
  (void)plan.assign([](std::uint32_t d) { return d == 0 ? 3u : 0u; }, t0);
  EXPECT_EQ(plan.outstanding(0), 2u);
  EXPECT_FALSE(plan.next_overdue(1s)) << "no other daemon to ask: nothing to wake up for";
  EXPECT_TRUE(plan.stall_overdue(t0 + 10s, 1s).empty()) << "stalled with no other daemon to take its batches";
  EXPECT_FALSE(plan.stalled(0));
  plan.up(1);  // another comes: daemon 0 has been overdue since t0 + 1 s
  EXPECT_EQ(plan.next_overdue(1s), t0 + 1s);
  const auto stalls = plan.stall_overdue(t0 + 10s, 1s);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].daemon, 0u);
  EXPECT_EQ(stalls[0].taken, 2u);
  EXPECT_FALSE(plan.next_overdue(1s)) << "daemon 1 holds nothing";
  (void)plan.lost(1);
  EXPECT_TRUE(plan.stall_overdue(t0 + 20s, 1s).empty());
}

// K daemons of S receive slots, as FanInLink drives the plan: each daemon delivers what
// was wanted of it in the order wanted, only into a free slot (its gateway sends only for
// a credit), unless it is stopped; the caller keeps its last `window` batches (fewer than
// one daemon's slots); evicted batches free their slot.
class Simulation {
 public:
  Simulation(std::uint32_t k, std::uint32_t slots, std::uint64_t batches, std::size_t window)
      : slots_(slots), window_(window), used_(k, 0), queue_(k), stopped_(k, false), up_(k, true) {
    for (std::uint32_t d = 0; d < k; ++d) plan_.up(plan_.add_daemon());
    plan_.start(0, batches);
  }

  void stop(std::uint32_t d, bool stopped) { stopped_[d] = stopped; }
  void lose(std::uint32_t d) {
    (void)plan_.lost(d);
    queue_[d].clear();
    up_[d] = false;
  }
  // Whether daemon `d` is up, as FanInLink knows it (the plan is told, never asked).
  bool up(std::uint32_t d) const { return up_[d]; }
  void come_back(std::uint32_t d) {
    plan_.up(d);
    up_[d] = true;
  }
  // One round of FanInLink's collect(): stalls, evictions, wants, then hands out what it can.
  void round(Clock::time_point now, Clock::duration overdue) {
    (void)plan_.stall_overdue(now, overdue);
    const FanInPlan::Assignment a = plan_.assign([&](std::uint32_t d) { return slots_ - used_[d]; }, now);
    for (std::uint64_t index : a.evicted) {
      used_[carrier_.at(index)] -= 1;
      carrier_.erase(index);
    }
    for (const auto& w : a.wants)
      queue_[w.daemon].insert(queue_[w.daemon].end(), w.batches.begin(), w.batches.end());
    hand_out();
  }
  // Daemon `d` delivers its next wanted batch if it can.
  void deliver(std::uint32_t d, Clock::time_point now) {
    if (stopped_[d] || !up_[d] || queue_[d].empty() || used_[d] >= slots_) return;
    const std::uint64_t index = queue_[d].front();
    queue_[d].pop_front();
    if (plan_.arrived(d, index, now).first) {
      used_[d] += 1;
      carrier_[index] = d;
    }
    hand_out();
  }
  const std::vector<std::uint64_t>& handed() const { return handed_; }

 private:
  void hand_out() {
    while (plan_.head_arrived()) {
      held_.push_back(plan_.head());
      handed_.push_back(plan_.head());
      plan_.handed_out();
      if (held_.size() > window_) {  // the caller lets its oldest batch go
        used_[carrier_.at(held_.front())] -= 1;
        carrier_.erase(held_.front());
        held_.pop_front();
      }
    }
  }

  FanInPlan plan_;
  std::uint32_t slots_;
  std::size_t window_;
  std::vector<std::uint32_t> used_;
  std::vector<std::deque<std::uint64_t>> queue_;
  std::vector<bool> stopped_;
  std::vector<bool> up_;
  std::map<std::uint64_t, std::uint32_t> carrier_;  // in a slot: came, or held by the caller
  std::deque<std::uint64_t> held_;
  std::vector<std::uint64_t> handed_;
};

// The reviewer's case: two daemons of 5 slots, the caller keeping its last 3 batches, and
// daemon 0 stopped after its first batch. Daemon 1's slots fill with later batches while
// the ones daemon 0 held are asked of it: they land only because later ones make room.
TEST(FanInPlanTest, TheAwaitedBatchLandsWhenTheCallerHoldsBatchesAndLaterOnesFillTheSlots) {
  Simulation sim(2, 5, 15, 3);
  Clock::time_point now = Clock::now();
  sim.round(now, 300ms);
  sim.deliver(0, now);
  sim.stop(0, true);
  for (int step = 0; step < 200 && sim.handed().size() < 15; ++step) {
    now += 100ms;
    sim.round(now, 300ms);
    for (int i = 0; i < 3; ++i) sim.deliver(1, now);
  }
  std::vector<std::uint64_t> want(15);
  for (std::uint64_t i = 0; i < 15; ++i) want[i] = i;
  EXPECT_EQ(sim.handed(), want) << "the pass stopped at batch " << sim.handed().size()
                                << " though the caller holds only 3 batches";
}

// Random deliveries, stops, losses and returns over 1–3 daemons of 2–5 slots, the caller
// holding up to one daemon's slots less one: the pass comes out whole, in order, each
// batch once, and never stops while a daemon that is not stopped is up.
TEST(FanInPlanTest, RandomLossesStopsAndHeldBatchesNeverLoseRepeatOrStopThePass) {
  for (std::uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t k = 1 + seed % 3, slots = 2 + seed % 4;
    const std::uint64_t batches = 40;
    Simulation sim(k, slots, batches, rng() % slots);
    Clock::time_point now = Clock::now();
    int step = 0;
    for (; step < 20000 && sim.handed().size() < batches; ++step) {
      now += 10ms;
      sim.round(now, 300ms);
      const std::uint32_t d = rng() % k;
      const int event = static_cast<int>(rng() % 100);
      bool others_up = false;
      for (std::uint32_t i = 0; i < k; ++i) others_up = others_up || (i != d && sim.up(i));
      if (event < 2 && others_up && sim.up(d)) {
        sim.lose(d);
      } else if (event < 5 && others_up) {
        sim.stop(d, true);  // hung, routed around
      } else if (event < 12) {
        sim.stop(d, false);
        if (!sim.up(d)) sim.come_back(d);
      } else {
        sim.deliver(d, now);
      }
    }
    std::vector<std::uint64_t> want(batches);
    for (std::uint64_t i = 0; i < batches; ++i) want[i] = i;
    ASSERT_EQ(sim.handed(), want) << "seed " << seed << ": " << k << " daemons of " << slots
                                  << " slots, stopped at " << sim.handed().size() << " after " << step
                                  << " steps";
  }
}

}  // namespace
}  // namespace forkfeed
