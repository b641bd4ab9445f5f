// Dispatcher: placement, the generation filter, and re-issue after a death — on a real
// arena's rings, with the test playing the workers (popping tasks, pushing completions).
#include "loader/dispatcher.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/monotonic_clock.h"
#include "testing/small_arena.h"
#include "testing/temp_dataset.h"
#include "transport/slot_contents.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kWorkers = 2, kSlots = 4, kBatch = 3;

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto index = DatasetIndex::from_image_folder(testing::make_image_folder(dir_.path(), 12, 2));
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(index).value();
    health_.killed.assign(kWorkers, false);
  }

  // REQUIRES: SetUp() ran (the index exists).
  Dispatcher make(OnError on_error) {
    arena_ = testing::small_arena(index_, kWorkers, kSlots, kBatch, 8, on_error);
    slots_ = std::make_shared<SlotPool>(kSlots);
    Dispatcher d(arena_, slots_, index_, on_error, health_, pool_, 0);
    d.begin_generation();
    return d;
  }

  // Marks worker `w` as started, as its first heartbeat would.
  void start_worker(std::uint32_t w) { pool_.worker(w).progress_ns.store(1); }

  // Plays worker `w`: takes its next task and reports it with `outcome`.
  Task complete_next(std::uint32_t w, TaskOutcome outcome = TaskOutcome::kDone) {
    auto task = arena_->channel(w).tasks.try_pop();
    EXPECT_TRUE(task.has_value()) << "worker " << w << " has no task";
    if (!task) return {};
    EXPECT_TRUE(arena_->channel(w).completions.try_push(
        Completion{task->generation, task->batch_id, task->slot, outcome, 0, 0}));
    return *task;
  }

  std::uint32_t take_slot() {
    auto slot = slots_->take();
    EXPECT_TRUE(slot.has_value());
    return slot.value_or(0);
  }

  testing::TempDir dir_;
  PoolMemory pool_ = PoolMemory::create(kWorkers).value();
  DatasetIndex index_;
  WorkerHealth health_;
  std::shared_ptr<Arena> arena_;
  std::shared_ptr<SlotPool> slots_;
};

const std::vector<std::uint64_t> kSamples = {0, 1, 2};

TEST_F(DispatcherTest, WorkGoesToTheLeastLoadedWorkerThatIsUpAndNotBeingKilled) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  start_worker(1);
  for (std::uint64_t b = 0; b < 3; ++b) ASSERT_TRUE(d.submit(0, b, take_slot(), kSamples).ok());
  EXPECT_EQ(d.unfinished(0), 2u);
  EXPECT_EQ(d.unfinished(1), 1u);
  health_.killed[1] = true;
  ASSERT_TRUE(d.submit(0, 3, take_slot(), kSamples).ok());
  EXPECT_EQ(d.unfinished(0), 3u);
  EXPECT_EQ(d.unfinished(1), 1u);
  EXPECT_EQ(d.in_flight(), 4u);
}

// A worker in the middle of another loader's long sample (a costly pipeline) would keep
// a task waiting for all of it, and its slot with it: work goes to the others meanwhile.
TEST_F(DispatcherTest, WorkAvoidsAWorkerInTheMiddleOfAnotherLoadersLongSample) {
  Dispatcher d = make(OnError::kSkip);  // this loader is 0 in the pool
  start_worker(0);
  start_worker(1);
  WorkerState& busy = pool_.worker(0);
  busy.progress_ns.store(monotonic_ns());
  busy.sample_expected_ns.store(500'000'000);
  busy.current_loader.store(7);  // another loader's
  busy.current_sample.store(3);
  for (std::uint64_t b = 0; b < 3; ++b) ASSERT_TRUE(d.submit(0, b, take_slot(), kSamples).ok());
  EXPECT_EQ(d.unfinished(0), 0u) << "a task went behind another loader's long sample";
  EXPECT_EQ(d.unfinished(1), 3u);
  // Its own long sample, or another's short one, holds nothing back.
  busy.current_loader.store(0);
  ASSERT_TRUE(d.submit(0, 3, take_slot(), kSamples).ok());
  EXPECT_EQ(d.unfinished(0), 1u);
}

TEST_F(DispatcherTest, AWorkerStillStartingGetsWorkOnlyWhenNoneIsUp) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(1);
  for (std::uint64_t b = 0; b < 2; ++b) ASSERT_TRUE(d.submit(0, b, take_slot(), kSamples).ok());
  EXPECT_EQ(d.unfinished(0), 0u);
  EXPECT_EQ(d.unfinished(1), 2u);
}

TEST_F(DispatcherTest, CompletionsOfThisGenerationWaitForTheirTurn) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  ASSERT_TRUE(d.submit(0, 0, take_slot(), kSamples).ok());
  ASSERT_TRUE(d.submit(0, 1, take_slot(), kSamples).ok());
  complete_next(0);
  complete_next(0);
  EXPECT_FALSE(d.take(0).has_value());  // not taken in before drain()
  d.drain();
  EXPECT_EQ(d.in_flight(), 0u);
  auto second = d.take(1);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->outcome, TaskOutcome::kDone);
  ASSERT_TRUE(d.take(0).has_value());
  EXPECT_FALSE(d.take(0).has_value());  // handed out once
}

TEST_F(DispatcherTest, StaleAndCancelledCompletionsGiveTheirSlotBack) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  ASSERT_TRUE(d.submit(0, 0, take_slot(), kSamples).ok());
  ASSERT_TRUE(d.submit(0, 1, take_slot(), kSamples).ok());
  const std::uint64_t old = d.generation();
  d.begin_generation();
  EXPECT_GT(d.generation(), old);
  EXPECT_EQ(arena_->control().generation.load(), d.generation());  // workers see it
  ASSERT_TRUE(d.submit(0, 0, take_slot(), kSamples).ok());
  complete_next(0);                           // the old pass's batch 0
  complete_next(0, TaskOutcome::kCancelled);  // the old pass's batch 1
  complete_next(0, TaskOutcome::kCancelled);  // this pass's batch 0, cancelled
  d.drain();
  EXPECT_FALSE(d.take(0).has_value());
  EXPECT_FALSE(d.take(1).has_value());
  EXPECT_EQ(slots_->free_count(), kSlots);
}

TEST_F(DispatcherTest, ANewGenerationDropsTheBatchesWaitingForTheirTurn) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  ASSERT_TRUE(d.submit(0, 1, take_slot(), kSamples).ok());
  complete_next(0);
  d.drain();
  d.begin_generation();
  EXPECT_FALSE(d.take(1).has_value());
  EXPECT_EQ(slots_->free_count(), kSlots);
}

TEST_F(DispatcherTest, ADeadWorkersTasksOfThisGenerationGoToAnotherWorkerWithoutThePoisonedSample) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  const std::uint32_t slot = take_slot();
  ASSERT_TRUE(d.submit(0, 0, slot, kSamples).ok());
  ASSERT_TRUE(arena_->channel(0).tasks.try_pop().has_value());  // worker 0 took it, then died on sample 1
  health_.poisoned.emplace(1, "a worker died decoding it");
  pool_.reset_worker(0);     // the pool reaps it; its replacement is not up yet
  arena_->reset_channel(0);  // the Supervisor rebuilds it for the replacement
  start_worker(1);
  ASSERT_TRUE(d.reissue(0, /*resubmit=*/true).ok());
  EXPECT_EQ(d.unfinished(0), 0u);
  ASSERT_EQ(d.unfinished(1), 1u);
  const Task again = complete_next(1);
  EXPECT_EQ(again.slot, slot);
  EXPECT_EQ(again.count, 2u);  // samples 0 and 2; 1 is noted as skipped, not decoded
  const SlotContents contents(*arena_, slot);
  ASSERT_EQ(contents.skipped(), 1u);
  EXPECT_EQ(contents.skipped_index(0), 1u);
}

TEST_F(DispatcherTest, UnderFailABatchWithAPoisonedSampleFailsInItsTurnWithoutAWorker) {
  Dispatcher d = make(OnError::kFail);
  start_worker(0);
  health_.poisoned.emplace(2, "a worker died decoding it");
  ASSERT_TRUE(d.submit(0, 0, take_slot(), kSamples).ok());
  EXPECT_EQ(d.in_flight(), 0u);
  EXPECT_FALSE(arena_->channel(0).tasks.try_pop().has_value());
  auto failed = d.take(0);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->outcome, TaskOutcome::kFailed);
}

TEST_F(DispatcherTest, TasksOfADeadWorkerAreNotIssuedAgainWhenTheLoaderCannotGoOnOrTheyAreStale) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  ASSERT_TRUE(d.submit(0, 0, take_slot(), kSamples).ok());
  ASSERT_TRUE(d.reissue(0, /*resubmit=*/false).ok());
  ASSERT_TRUE(d.submit(0, 1, take_slot(), kSamples).ok());
  d.begin_generation();
  ASSERT_TRUE(d.reissue(0, /*resubmit=*/true).ok());
  EXPECT_EQ(d.in_flight(), 0u);
  EXPECT_EQ(slots_->free_count(), kSlots);
}

TEST_F(DispatcherTest, TheOldestUnfinishedTaskTellsWhenAWorkerWasLastGivenWork) {
  Dispatcher d = make(OnError::kSkip);
  start_worker(0);
  EXPECT_FALSE(d.oldest_issued_ns(0).has_value());
  ASSERT_TRUE(d.submit(0, 0, take_slot(), kSamples).ok());
  const auto first = d.oldest_issued_ns(0);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(d.submit(0, 1, take_slot(), kSamples).ok());
  EXPECT_EQ(d.oldest_issued_ns(0), first);
  complete_next(0);
  complete_next(0);
  d.drain();
  EXPECT_FALSE(d.oldest_issued_ns(0).has_value());
}

TEST_F(DispatcherTest, APassIsIssuedInItsOrderFromItsPositionWhileSlotsAreFree) {
  Dispatcher d = make(OnError::kFail);
  start_worker(0);
  start_worker(1);
  const Sampler sampler(SamplerSpec{12, 1, 0, 1, kBatch, true, false});  // 4 batches
  d.begin_pass(sampler, {2, 1});
  ASSERT_TRUE(d.issue().ok());
  EXPECT_EQ(d.in_flight(), 3u) << "batches 1, 2 and 3: the pass ends before the slots run out";
  EXPECT_EQ(slots_->free_count(), kSlots - 3);
  const std::vector<std::uint64_t> order = sampler.epoch_order(2);
  std::vector<std::uint64_t> ids;
  for (std::uint32_t w : {0u, 1u, 0u}) {
    const Task task = complete_next(w);
    ids.push_back(task.batch_id);
    EXPECT_EQ(task.epoch, 2u);
    EXPECT_EQ(task.generation, d.generation());
    const SlotView slot = arena_->slot(task.slot);
    const auto expected = sampler.batch(order, task.batch_id);
    EXPECT_EQ(std::vector<std::uint64_t>(slot.sample_indices, slot.sample_indices + expected.size()),
              std::vector<std::uint64_t>(expected.begin(), expected.end()));
  }
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{1, 2, 3}));

  const std::uint64_t before = d.generation();
  d.begin_pass(sampler, {3, 0});
  EXPECT_EQ(d.generation(), before + 1) << "a new pass is a new generation";
}

}  // namespace
}  // namespace forkfeed
