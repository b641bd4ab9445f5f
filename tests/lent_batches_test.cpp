// LentBatches: a batch pushed to a client holds its slot until the client returns it by
// handle and tag; a return that does not match a lent batch changes nothing; and when
// the client is gone, every slot it held goes back to the loader.
#include "daemon/lent_batches.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "loader/batch_factory.h"
#include "loader/slot_pool.h"

namespace forkfeed {
namespace {

class LentBatchesTest : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kSlots = 4;

  // A batch holding the next free slot of the pool, as the loader hands one out.
  Batch next_batch() {
    static const std::int64_t label = 0;
    static const std::uint64_t index = 0;
    static const std::uint8_t pixel[3] = {};
    const auto slot = pool_->take();
    EXPECT_TRUE(slot.has_value()) << "the test took more slots than the pool has";
    const BatchFactory::Parts parts{pixel, sizeof pixel, DType::kUint8, 1, 1, &label, &index, 0, 0};
    return BatchFactory::make(parts,
                              std::make_unique<detail::PoolSlotLease>(nullptr, pool_, slot.value_or(0)));
  }

  std::shared_ptr<SlotPool> pool_ = std::make_shared<SlotPool>(kSlots);
  LentBatches lent_{kSlots};
};

TEST_F(LentBatchesTest, LentBatchesHoldTheirSlotsUntilReturned) {
  EXPECT_EQ(lent_.capacity(), kSlots);
  std::vector<LentBatches::Ticket> tickets;
  std::set<std::uint32_t> handles;
  std::set<std::uint64_t> tags;
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    EXPECT_FALSE(lent_.full());
    tickets.push_back(lent_.lend(next_batch()));
    EXPECT_LT(tickets.back().handle, kSlots);
    EXPECT_TRUE(handles.insert(tickets.back().handle).second) << "handle lent twice";
    EXPECT_TRUE(tags.insert(tickets.back().tag).second) << "tag used twice";
    EXPECT_EQ(lent_.count(), i + 1);
  }
  EXPECT_TRUE(lent_.full());
  EXPECT_EQ(pool_->free_count(), 0u) << "a lent batch gave its slot back";

  ASSERT_TRUE(lent_.give_back(tickets[2].handle, tickets[2].tag));
  EXPECT_EQ(lent_.count(), kSlots - 1);
  EXPECT_FALSE(lent_.full());
  EXPECT_EQ(pool_->free_count(), 1u) << "a returned batch kept its slot";
  for (const auto& t : {tickets[0], tickets[1], tickets[3]}) ASSERT_TRUE(lent_.give_back(t.handle, t.tag));
  EXPECT_EQ(lent_.count(), 0u);
  EXPECT_EQ(pool_->free_count(), kSlots);
}

TEST_F(LentBatchesTest, AReturnThatMatchesNoLentBatchChangesNothing) {
  const LentBatches::Ticket t = lent_.lend(next_batch());
  const auto unchanged = [&](const char* what) {
    EXPECT_EQ(lent_.count(), 1u) << what;
    EXPECT_EQ(pool_->free_count(), kSlots - 1) << what;
  };
  EXPECT_FALSE(lent_.give_back(t.handle, t.tag + 1));
  unchanged("a return with another tag");
  EXPECT_FALSE(lent_.give_back(kSlots, t.tag));
  unchanged("a handle out of range");
  EXPECT_FALSE(lent_.give_back(0xffffffffu, t.tag));
  unchanged("the largest handle");
  const std::uint32_t other = t.handle == 0 ? 1 : 0;
  EXPECT_FALSE(lent_.give_back(other, t.tag));
  unchanged("a handle not lent");

  ASSERT_TRUE(lent_.give_back(t.handle, t.tag));
  EXPECT_FALSE(lent_.give_back(t.handle, t.tag)) << "a batch was returned twice";
  EXPECT_EQ(lent_.count(), 0u);
  EXPECT_EQ(pool_->free_count(), kSlots);
}

TEST_F(LentBatchesTest, AStaleReturnCannotFreeAReusedHandle) {
  const LentBatches::Ticket old = lent_.lend(next_batch());
  ASSERT_TRUE(lent_.give_back(old.handle, old.tag));
  const LentBatches::Ticket reused = lent_.lend(next_batch());
  ASSERT_EQ(reused.handle, old.handle) << "the free handle was not reused (the test needs it)";
  EXPECT_NE(reused.tag, old.tag);
  EXPECT_FALSE(lent_.give_back(old.handle, old.tag)) << "the old ticket freed the new batch";
  EXPECT_EQ(lent_.count(), 1u);
  EXPECT_EQ(pool_->free_count(), kSlots - 1);
  EXPECT_TRUE(lent_.give_back(reused.handle, reused.tag));
}

TEST_F(LentBatchesTest, AClientGoneReturnsEverySlot) {
  {
    LentBatches lent(kSlots);
    for (std::uint32_t i = 0; i < kSlots - 1; ++i) lent.lend(next_batch());
    ASSERT_EQ(pool_->free_count(), 1u);
  }  // the session ends with batches still lent
  EXPECT_EQ(pool_->free_count(), kSlots) << "slots lent to a client that went away were lost";
  std::set<std::uint32_t> slots;
  while (const auto slot = pool_->take()) slots.insert(*slot);
  EXPECT_EQ(slots.size(), kSlots);
}

}  // namespace
}  // namespace forkfeed
