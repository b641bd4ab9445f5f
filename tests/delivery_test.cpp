// Delivery: a completed slot becomes a Batch, the error of a failed batch, or nothing;
// every skipped sample is counted and each bad file logged once. On a real arena, the
// test playing the worker that fills the slot.
#include "loader/delivery.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "testing/small_arena.h"
#include "testing/temp_dataset.h"
#include "transport/slot_contents.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kSlots = 3, kBatch = 4;

class DeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto index = DatasetIndex::from_image_folder(testing::make_image_folder(dir_.path(), 12, 2));
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(index).value();
    arena_ = testing::small_arena(index_, 1, kSlots, kBatch, 4, OnError::kSkip);
    ASSERT_TRUE(arena_);
    slots_ = std::make_shared<SlotPool>(kSlots);
    log_ = std::make_shared<spdlog::logger>("delivery_test",
                                            std::make_shared<spdlog::sinks::ostream_sink_st>(said_));
    delivery_ = std::make_unique<Delivery>(arena_, slots_, index_, log_);
  }

  // Fills a slot with `samples` and plays the worker: those in `bad` are skipped.
  Completion complete(const std::vector<std::uint64_t>& samples, const std::vector<std::uint64_t>& bad,
                      TaskOutcome outcome = TaskOutcome::kDone) {
    const std::uint32_t slot = slots_->take().value();
    const SlotContents contents(*arena_, slot);
    const std::uint32_t count = contents.prepare(samples, index_, {});
    for (std::uint32_t i = 0; i < count; ++i) {
      if (std::find(bad.begin(), bad.end(), contents.sample(i)) != bad.end()) {
        contents.skip(i, Status::BadData("cannot decode"));
      } else {
        contents.keep(i);
      }
    }
    return Completion{1, 0, slot, outcome};
  }

  std::size_t times_said(const std::string& text) const {
    std::size_t n = 0;
    const std::string all = said_.str();
    for (auto at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) ++n;
    return n;
  }

  testing::TempDir dir_;
  DatasetIndex index_;
  std::shared_ptr<Arena> arena_;
  std::shared_ptr<SlotPool> slots_;
  std::ostringstream said_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<Delivery> delivery_;
};

TEST_F(DeliveryTest, ABatchHoldsItsSlotUntilItIsReleased) {
  {
    auto batch = delivery_->deliver(complete({3, 5, 7}, {}), 2, 9);
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    ASSERT_TRUE(batch->has_value());
    EXPECT_EQ((*batch)->size(), 3u);
    EXPECT_EQ(slots_->free_count(), kSlots - 1);
  }
  EXPECT_EQ(slots_->free_count(), kSlots);
  LoaderStats stats;
  delivery_->count_into(stats);
  EXPECT_EQ(stats.delivered_batches, 1u);
  EXPECT_EQ(stats.delivered_samples, 3u);
  EXPECT_EQ(stats.skipped_samples, 0u);
}

TEST_F(DeliveryTest, SkippedSamplesAreCountedEveryTimeAndLoggedOncePerFile) {
  const std::string path(index_.path(5));
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto batch = delivery_->deliver(complete({3, 5, 7}, {5}), epoch, 0);
    ASSERT_TRUE(batch.ok() && batch->has_value());
    EXPECT_EQ((*batch)->size(), 2u);
  }
  LoaderStats stats;
  delivery_->count_into(stats);
  EXPECT_EQ(stats.skipped_samples, 2u);
  EXPECT_EQ(stats.delivered_samples, 4u);
  EXPECT_EQ(times_said("skipped " + path), 1u) << said_.str();
}

TEST_F(DeliveryTest, ABatchWhoseSamplesWereAllSkippedIsNothingAndGivesItsSlotBack) {
  auto batch = delivery_->deliver(complete({3, 5}, {3, 5}), 0, 0);
  ASSERT_TRUE(batch.ok());
  EXPECT_FALSE(batch->has_value());
  EXPECT_EQ(slots_->free_count(), kSlots);
}

TEST_F(DeliveryTest, AFailedBatchNamesTheFileAndGivesItsSlotBack) {
  auto batch = delivery_->deliver(complete({3, 5, 7}, {7}, TaskOutcome::kFailed), 0, 0);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), Status::Code::kBadData);
  EXPECT_NE(batch.status().message().find(std::string(index_.path(7))), std::string::npos)
      << batch.status().message();
  EXPECT_EQ(slots_->free_count(), kSlots);
}

TEST_F(DeliveryTest, ASlotWithSamplesNeitherWrittenNorSkippedIsOurBug) {
  const std::uint32_t slot = slots_->take().value();
  (void)SlotContents(*arena_, slot)
      .prepare(std::vector<std::uint64_t>{3, 5}, index_, {});  // no worker touched it
  auto batch = delivery_->deliver(Completion{1, 4, slot, TaskOutcome::kDone}, 0, 4);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), Status::Code::kInternal);
  EXPECT_EQ(slots_->free_count(), kSlots);
}

}  // namespace
}  // namespace forkfeed
