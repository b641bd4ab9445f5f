// LoaderInternals: forkfeedd's values of a Loader agree with what state() writes and
// load_state() reads, so the daemon can skip the JSON between them.
#include "loader/loader_internals.h"
#include "dataset/dataset_identity.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

class LoaderInternalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), 10, 2, 2, 24, 32);
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = 1;
    o.batch_size = 3;  // 4 batches per epoch
    o.size = 16;
    o.seed = 5;
    o.log_level = "error";
    auto loader = Loader::open(o);
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    loader_ = std::move(loader).value();
    ASSERT_EQ(loader_->batches_per_epoch(), 4u);
  }

  // Where state() says the loader is.
  PassPosition::Seek recorded() const {
    auto c = decode_checkpoint(loader_->state(), LoaderInternals::order_key(*loader_));
    EXPECT_TRUE(c.ok()) << c.status().message();
    return {c->epoch, c->position};
  }

  Batch next_batch() {
    auto b = loader_->next();
    EXPECT_TRUE(b.ok() && b->has_value());
    return std::move(**b);
  }

  testing::TempDir dir_;
  std::string root_;
  std::unique_ptr<Loader> loader_;
};

TEST_F(LoaderInternalsTest, OrderKeyIsTheOneOfItsDatasetAndOptions) {
  const OrderKey& key = LoaderInternals::order_key(*loader_);
  EXPECT_EQ(key.dataset.samples, loader_->dataset().size());
  EXPECT_EQ(key.dataset, dataset_identity(loader_->dataset()));
  EXPECT_EQ(key.seed, 5u);
  EXPECT_EQ(key.batch_size, 3u);
}

TEST_F(LoaderInternalsTest, PositionIsWhatStateRecords) {
  EXPECT_EQ(LoaderInternals::position(*loader_), (PassPosition::Seek{0, 0}));
  for (int i = 0; i < 4; ++i) {
    (void)next_batch();
    EXPECT_EQ(LoaderInternals::position(*loader_), recorded());
  }
  EXPECT_EQ(LoaderInternals::position(*loader_), (PassPosition::Seek{1, 0}));  // a complete pass
}

TEST_F(LoaderInternalsTest, SeekIsLoadStateWithoutTheJson) {
  ASSERT_TRUE(LoaderInternals::seek(*loader_, {2, 3}).ok());
  EXPECT_EQ(recorded(), (PassPosition::Seek{2, 3}));
  const Batch b = next_batch();
  EXPECT_EQ(b.epoch(), 2u);
  EXPECT_EQ(b.index(), 3u);

  // The end of an epoch is the start of the next; past it, the same refusal as load_state's.
  ASSERT_TRUE(LoaderInternals::seek(*loader_, {0, 4}).ok());
  EXPECT_EQ(LoaderInternals::position(*loader_), (PassPosition::Seek{1, 0}));
  const Status refused = LoaderInternals::seek(*loader_, {0, 5});
  const OrderKey& key = LoaderInternals::order_key(*loader_);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), loader_->load_state(encode_checkpoint(Checkpoint{0, 5, key})).message());
  EXPECT_EQ(LoaderInternals::position(*loader_), (PassPosition::Seek{1, 0}));  // unchanged
}

// forkfeedd sends an error as lasting (the stream stays broken) when the loader says so:
// a bad file fails its batch only; a worker death past max_worker_restarts ends it.
TEST(LoaderInternalsBrokenTest, ABadFileIsNotLastingAWorkerDeathPastTheBudgetIs) {
  testing::HangGuard guard(60, "LoaderInternalsBrokenTest");
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 8, 1, 2, 24, 32);
  std::string bad;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && bad.empty()) bad = entry.path().string();
  }
  std::ofstream(bad, std::ios::trunc) << "not an image";
  LoaderOptions o = testing::small_options(root, 1, 8);
  o.shuffle = false;
  o.max_worker_restarts = 0;
  auto loader = Loader::open(o);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  EXPECT_FALSE(LoaderInternals::broken(**loader));
  auto failed = (*loader)->next();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kBadData) << failed.status().message();
  EXPECT_FALSE(LoaderInternals::broken(**loader)) << "a bad file fails its batch, not the loader";

  const auto workers = testing::children_of(::getpid());
  ASSERT_EQ(workers.size(), 1u);
  ASSERT_EQ(::kill(workers.front(), SIGKILL), 0);
  Status lasting;
  for (int calls = 0; calls < 100 && lasting.ok(); ++calls) {
    auto b = (*loader)->next();
    if (!b.ok()) lasting = b.status();
  }
  EXPECT_EQ(lasting.code(), Status::Code::kWorkerDied) << lasting.message();
  EXPECT_TRUE(LoaderInternals::broken(**loader));
}

// A pass on demand gives the batches wanted, in the order wanted, each as the whole
// pass has it; a seek ends it; a batch past the epoch and a want outside it are refused.
TEST_F(LoaderInternalsTest, APassOnDemandGivesTheWantedBatchesAsTheWholePassHasThem) {
  const testing::Batches whole = testing::read_pass(*loader_);  // epoch 0
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_EQ(LoaderInternals::want(*loader_, 0).code(), Status::Code::kFailedPrecondition)
      << "not on demand yet";
  ASSERT_TRUE(LoaderInternals::begin_demand(*loader_, 0).ok());
  EXPECT_EQ(LoaderInternals::want(*loader_, 4).code(), Status::Code::kInvalidArgument)
      << "past the epoch's end";
  EXPECT_EQ(LoaderInternals::next_wanted(*loader_).status().code(), Status::Code::kFailedPrecondition);
  for (std::uint64_t b : {2u, 0u, 3u}) ASSERT_TRUE(LoaderInternals::want(*loader_, b).ok());
  EXPECT_EQ(LoaderInternals::wanted(*loader_), 3u);
  for (std::uint64_t b : {2u, 0u, 3u}) {
    auto w = LoaderInternals::next_wanted(*loader_);
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(w->index, b);
    ASSERT_TRUE(w->batch.ok() && w->batch->has_value());
    EXPECT_TRUE(testing::BatchRecord(**w->batch) == whole[b]) << "batch " << b << " on demand differs";
  }
  EXPECT_EQ(LoaderInternals::wanted(*loader_), 0u);
  // A seek ends the pass on demand: the loader goes on as a Loader.
  ASSERT_TRUE(LoaderInternals::seek(*loader_, {0, 1}).ok());
  EXPECT_EQ(LoaderInternals::wanted(*loader_), 0u);
  const testing::Batches rest = testing::read_pass(*loader_);
  EXPECT_TRUE(rest == testing::Batches(whole.begin() + 1, whole.end()));
}

}  // namespace
}  // namespace forkfeed
