// SlotContents: the slot's bookkeeping — filled by the orchestrator, compacted by a
// worker, read back — keeps every label with its sample and every skip with its reason.
#include "transport/slot_contents.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/small_arena.h"
#include "testing/temp_dataset.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kBatch = 6;

class SlotContentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string root = testing::make_image_folder(dir_.path(), 12, 3);
    auto index = DatasetIndex::from_image_folder(root);
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(index).value();
    arena_ = testing::small_arena(index_, 1, 2, kBatch, 4, OnError::kSkip);
    ASSERT_TRUE(arena_);
  }

  // What a worker does: keeps the samples it decodes, skips the others.
  static void work(const SlotContents& slot, std::uint32_t count, const std::vector<bool>& fails) {
    for (std::uint32_t i = 0; i < count; ++i) {
      if (fails[i]) {
        slot.skip(i, Status::BadData("cannot decode sample " + std::to_string(slot.sample(i))));
      } else {
        slot.keep(i);
      }
    }
  }

  testing::TempDir dir_;
  DatasetIndex index_;
  std::shared_ptr<Arena> arena_;
};

TEST_F(SlotContentsTest, KnownBadSamplesAreNotedAndNotHandedOut) {
  const SlotContents slot(*arena_, 0);
  const std::vector<std::uint64_t> batch{7, 2, 9, 4};
  const std::uint32_t count = slot.prepare(batch, index_, {{2, "crashed a worker"}, {4, "crashed again"}});
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(slot.sample(0), 7u);
  EXPECT_EQ(slot.sample(1), 9u);
  ASSERT_EQ(slot.skipped(), 2u);
  EXPECT_EQ(slot.skipped_index(0), 2u);
  EXPECT_EQ(slot.skip_reason(0), "crashed a worker");
  EXPECT_EQ(slot.skipped_index(1), 4u);
  EXPECT_FALSE(slot.complete()) << "nothing is decoded yet";
  work(slot, count, {false, false});
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(slot.written(), 2u);
}

TEST_F(SlotContentsTest, CompactionKeepsEveryLabelWithItsSample) {
  const SlotContents slot(*arena_, 1);
  const std::vector<std::uint64_t> batch{3, 11, 0, 5, 8, 1};
  ASSERT_EQ(slot.prepare(batch, index_, {}), kBatch);
  work(slot, kBatch, {true, false, true, false, false, true});
  ASSERT_TRUE(slot.complete());
  ASSERT_EQ(slot.written(), 3u);
  const std::vector<std::uint64_t> kept{11, 5, 8};
  for (std::uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(slot.view().sample_indices[k], kept[k]);
    EXPECT_EQ(slot.view().labels[k], index_.label(kept[k]));
  }
  ASSERT_EQ(slot.skipped(), 3u);
  EXPECT_EQ(slot.skipped_index(2), 1u);
  EXPECT_EQ(slot.skip_reason(2), "cannot decode sample 1");
}

// The reported bug's shape: a task abandoned half way (a reset) leaves notes and kept
// samples behind; the next task in that slot starts from a clean slate, and a full batch
// never writes past its own arrays.
TEST_F(SlotContentsTest, APreparedSlotForgetsWhatAnAbandonedTaskLeft) {
  const SlotContents slot(*arena_, 0);
  const std::vector<std::uint64_t> first{0, 1, 2, 3, 4, 5};
  ASSERT_EQ(slot.prepare(first, index_, {}), kBatch);
  work(slot, 3, {true, true, true});  // cancelled after three skips
  const std::vector<std::uint64_t> second{6, 7, 8, 9, 10, 11};
  ASSERT_EQ(slot.prepare(second, index_, {}), kBatch);
  EXPECT_EQ(slot.skipped(), 0u);
  work(slot, kBatch, std::vector<bool>(kBatch, false));
  ASSERT_TRUE(slot.complete());
  for (std::uint32_t k = 0; k < kBatch; ++k) {
    EXPECT_EQ(slot.view().sample_indices[k], second[k]);
    EXPECT_EQ(slot.view().labels[k], index_.label(second[k]));
  }
}

TEST_F(SlotContentsTest, LongReasonsAreCutNotOverrun) {
  const SlotContents slot(*arena_, 1);
  const std::vector<std::uint64_t> batch{1, 2};
  ASSERT_EQ(slot.prepare(batch, index_, {{1, std::string(10000, 'x')}}), 1u);
  EXPECT_EQ(slot.skip_reason(0), std::string(kReasonBytes - 1, 'x'));
  const SlotView v = slot.view();
  EXPECT_LE(reinterpret_cast<const std::byte*>(v.skips + kBatch), v.pixels)
      << "the notes end before the pixels";
}

}  // namespace
}  // namespace forkfeed
