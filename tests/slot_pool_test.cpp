// SlotPool: every slot is handed out once until it is given back, and a Batch's lease
// gives its slot back exactly once, whenever and on whichever thread the Batch goes.
#include "loader/slot_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "forkfeed/batch.h"
#include "loader/batch_factory.h"

namespace forkfeed {
namespace {

// A one-sample batch whose lease returns `slot` to `pool`; it points at no arena memory.
Batch leased_batch(const std::shared_ptr<SlotPool>& pool, std::uint32_t slot) {
  static const std::int64_t label = 0;
  static const std::uint64_t index = 0;
  static const std::uint8_t pixel[3] = {};
  const BatchFactory::Parts parts{pixel, sizeof pixel, DType::kUint8, 1, 1, &label, &index, 0, 0};
  return BatchFactory::make(parts, std::make_unique<detail::PoolSlotLease>(nullptr, pool, slot));
}

TEST(SlotPool, HandsOutEverySlotOnceThenNothing) {
  SlotPool pool(5);
  EXPECT_EQ(pool.free_count(), 5u);
  std::set<std::uint32_t> taken;
  for (std::uint32_t i = 0; i < 5; ++i) {
    const auto slot = pool.take();
    ASSERT_TRUE(slot.has_value()) << "slot " << i << " of 5";
    EXPECT_LT(*slot, 5u);
    EXPECT_TRUE(taken.insert(*slot).second) << "slot " << *slot << " handed out twice";
    EXPECT_EQ(pool.free_count(), 4 - i);
  }
  EXPECT_FALSE(pool.take().has_value()) << "an exhausted pool handed out a slot";
  EXPECT_EQ(pool.free_count(), 0u);
}

TEST(SlotPool, ASlotGivenBackIsTheOneHandedOutNext) {
  SlotPool pool(3);
  const auto a = pool.take(), b = pool.take(), c = pool.take();
  ASSERT_TRUE(a && b && c);
  pool.give_back(*b);
  EXPECT_EQ(pool.free_count(), 1u);
  EXPECT_EQ(pool.take(), b) << "only slot " << *b << " was free";
  EXPECT_FALSE(pool.take().has_value());
}

TEST(SlotPool, AnEmptyPoolHasNothingToHandOut) {
  SlotPool pool(0);
  EXPECT_EQ(pool.free_count(), 0u);
  EXPECT_FALSE(pool.take().has_value());
}

TEST(SlotPool, ABatchGivesItsSlotBackWhenReleased) {
  auto pool = std::make_shared<SlotPool>(2);
  const auto slot = pool->take();
  ASSERT_TRUE(slot);
  Batch batch = leased_batch(pool, *slot);
  EXPECT_EQ(pool->free_count(), 1u);
  batch.release();
  EXPECT_EQ(pool->free_count(), 2u);
  batch.release();  // nothing left to give back
  EXPECT_EQ(pool->free_count(), 2u) << "a released batch gave its slot back twice";
}

TEST(SlotPool, AMovedBatchGivesItsSlotBackOnce) {
  auto pool = std::make_shared<SlotPool>(1);
  const auto slot = pool->take();
  ASSERT_TRUE(slot);
  auto moved = std::make_unique<Batch>(leased_batch(pool, *slot));
  {
    Batch holder = std::move(*moved);
    moved.reset();  // the moved-from batch holds no slot
    EXPECT_EQ(pool->free_count(), 0u) << "the moved-from batch gave the slot back";
  }
  EXPECT_EQ(pool->free_count(), 1u);
  EXPECT_EQ(pool->take(), slot);
}

TEST(SlotPool, ABatchOutlivingItsPoolGivesBackNothing) {
  auto pool = std::make_shared<SlotPool>(1);
  const std::weak_ptr<SlotPool> watch = pool;
  Batch batch = leased_batch(pool, 0);
  pool.reset();
  EXPECT_TRUE(watch.expired()) << "a batch kept its loader's pool alive";
  batch.release();  // must not touch the destroyed pool
}

TEST(SlotPool, BatchesReleasedOnManyThreadsReturnEverySlot) {
  constexpr std::uint32_t kSlots = 64, kThreads = 4;
  auto pool = std::make_shared<SlotPool>(kSlots);
  std::vector<std::vector<Batch>> per_thread(kThreads);
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    const auto slot = pool->take();
    ASSERT_TRUE(slot);
    per_thread[i % kThreads].push_back(leased_batch(pool, *slot));
  }
  ASSERT_EQ(pool->free_count(), 0u);
  std::vector<std::thread> threads;
  for (auto& batches : per_thread) {
    threads.emplace_back([&batches] {
      for (Batch& b : batches) b.release();
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(pool->free_count(), kSlots);
  std::set<std::uint32_t> slots;
  while (const auto slot = pool->take()) slots.insert(*slot);
  EXPECT_EQ(slots.size(), kSlots) << "a slot was lost or returned twice";
  EXPECT_EQ(*slots.rbegin(), kSlots - 1);
}

}  // namespace
}  // namespace forkfeed
