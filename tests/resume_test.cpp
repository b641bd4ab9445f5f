// Invariant 3: exact resume. The batches delivered before a state() was taken followed by
// those a loader resumed from it delivers equal an uninterrupted run, batch for batch and
// byte for byte, whatever the worker count; a state that another dataset or other order
// options produced is refused by name, and a refused load_state changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::Batches;

constexpr std::uint32_t kImages = 23;
constexpr std::uint64_t kBatches = 6;  // per epoch, with batch size 4
constexpr std::uint64_t kRun = 2 * kBatches;

Batches slice(const Batches& run, std::size_t from, std::size_t to) {
  return Batches(run.begin() + from, run.begin() + to);
}

class ResumeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), kImages, 3, 3, 40, 100);
    // The uninterrupted 2-epoch run, with 2 workers, and its state before every batch.
    full_ = new Batches();
    states_ = new std::vector<std::string>();
    auto loader = Loader::open(options(2));
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    states_->push_back((*loader)->state());
    for (std::uint64_t p = 0; p < kRun; ++p) {
      Batches one = testing::read_batches(**loader, 1);
      ASSERT_EQ(one.size(), 1u);
      full_->push_back(std::move(one.front()));
      states_->push_back((*loader)->state());
    }
    auto end = (*loader)->next();
    ASSERT_TRUE(end.ok() && !end->has_value()) << "epoch 1 ends after its 6 batches";
  }
  static void TearDownTestSuite() {
    delete full_;
    delete states_;
    delete dir_;
  }

  void SetUp() override {
    ASSERT_EQ(full_->size(), kRun);
    ASSERT_EQ(states_->size(), kRun + 1);
  }

  static LoaderOptions options(std::uint32_t workers) {
    LoaderOptions o = testing::small_options(root_, workers, 4);
    o.seed = 11;
    return o;
  }

  static testing::TempDir* dir_;
  static std::string root_;
  static Batches* full_;
  static std::vector<std::string>* states_;
};
testing::TempDir* ResumeTest::dir_ = nullptr;
std::string ResumeTest::root_;
Batches* ResumeTest::full_ = nullptr;
std::vector<std::string>* ResumeTest::states_ = nullptr;

TEST_F(ResumeTest, TheUninterruptedRunIsTwoWholeEpochs) {
  EXPECT_EQ(testing::exactly_once(testing::indices_of(slice(*full_, 0, kBatches)), kImages), "");
  EXPECT_EQ(testing::exactly_once(testing::indices_of(slice(*full_, kBatches, kRun)), kImages), "");
  for (std::uint64_t p = 0; p < kRun; ++p) {
    EXPECT_EQ((*full_)[p].epoch, p / kBatches);
    EXPECT_EQ((*full_)[p].position, p % kBatches);
  }
  const auto last = nlohmann::json::parse(states_->back());
  EXPECT_EQ(last.at("epoch"), 2) << states_->back();
  EXPECT_EQ(last.at("position"), 0) << states_->back();
}

// A new loader, with 1 or 3 workers instead of 2, opened from the state taken after p
// batches, delivers exactly batches p.. of the uninterrupted run.
TEST_F(ResumeTest, OpenFromEveryPositionWithAnotherWorkerCountContinuesTheRun) {
  testing::HangGuard guard(120, "ResumeTest.OpenFromEveryPosition");
  for (std::uint64_t p = 0; p <= kRun; ++p) {
    const std::uint32_t workers = p % 2 == 0 ? 1 : 3;
    SCOPED_TRACE("resumed after " + std::to_string(p) + " batches with " + std::to_string(workers) +
                 " workers from " + (*states_)[p]);
    auto loader = Loader::open(options(workers), (*states_)[p]);
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    EXPECT_EQ((*loader)->state(), (*states_)[p]) << "a resumed loader stands where the state says";
    const Batches rest = testing::read_batches(**loader, kRun - p);
    EXPECT_EQ(testing::first_difference(rest, slice(*full_, p, kRun)), "");
    EXPECT_EQ((*loader)->state(), states_->back());
    if (p < kRun) {
      auto end = (*loader)->next();
      ASSERT_TRUE(end.ok()) << end.status().message();
      EXPECT_FALSE(end->has_value()) << "the resumed run ends where the uninterrupted one did";
    }
  }
}

// load_state on a loader that is somewhere else, mid-pass with tasks in flight, or
// anywhere in another epoch, behaves like a fresh loader opened from the state.
TEST_F(ResumeTest, LoadStateOnALiveLoaderMidPassContinuesTheRun) {
  testing::HangGuard guard(120, "ResumeTest.LoadStateOnALiveLoader");
  std::vector<std::uint64_t> positions(kRun + 1);
  for (std::uint64_t p = 0; p <= kRun; ++p) positions[p] = p;
  std::mt19937 rng(31337);
  std::shuffle(positions.begin(), positions.end(), rng);
  auto loader = Loader::open(options(3));
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  for (std::uint64_t p : positions) {
    const std::size_t wander = rng() % 5;
    SCOPED_TRACE("load_state after " + std::to_string(p) + " batches, having read " + std::to_string(wander) +
                 " more batches elsewhere");
    testing::read_batches(**loader, wander);
    const Status s = (*loader)->load_state((*states_)[p]);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ((*loader)->state(), (*states_)[p]);
    const Batches rest = testing::read_batches(**loader, kRun - p);
    EXPECT_EQ(testing::first_difference(rest, slice(*full_, p, kRun)), "");
  }
}

// The loop of a training script that resumes: open from (or load) a state, then
// set_epoch(epoch) and a range-for, which begins with reset(). Neither moves a pass that
// has delivered nothing since it was resumed: the rest of the epoch follows.
TEST_F(ResumeTest, SetEpochAndRangeForAfterAResumeGoOnFromIt) {
  testing::HangGuard guard(120, "ResumeTest.SetEpochAndRangeForAfterAResume");
  auto rest_of_epoch = [](Loader& loader) {
    Batches run;
    for (Batch& batch : loader) run.emplace_back(batch);
    return run;
  };
  for (std::uint64_t p : {1u, 4u, 7u, 11u}) {
    SCOPED_TRACE("resumed after " + std::to_string(p) + " batches");
    const std::uint64_t epoch = p / kBatches, end = (epoch + 1) * kBatches;
    auto opened = Loader::open(options(2), (*states_)[p]);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    EXPECT_TRUE((*opened)->set_epoch(epoch).ok());
    EXPECT_EQ(testing::first_difference(rest_of_epoch(**opened), slice(*full_, p, end)), "");

    auto live = Loader::open(options(3));
    ASSERT_TRUE(live.ok()) << live.status().message();
    testing::read_batches(**live, 2);
    ASSERT_TRUE((*live)->load_state((*states_)[p]).ok());
    EXPECT_TRUE((*live)->set_epoch(epoch).ok());
    EXPECT_EQ(testing::first_difference(rest_of_epoch(**live), slice(*full_, p, end)), "");
  }
}

// Worker count, prefetch, start method and the epoch option are not part of the order:
// a state resumes under any of them, with the same pixels.
TEST_F(ResumeTest, WorkersPrefetchStartMethodAndEpochOptionDoNotMatter) {
  testing::HangGuard guard(60, "ResumeTest.WorkersPrefetchStartMethod");
  LoaderOptions o = options(4);
  o.prefetch = 1;
  o.start_method = StartMethod::kSpawn;
  o.epoch = 9;  // the state decides
  auto loader = Loader::open(o, (*states_)[5]);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  EXPECT_EQ(testing::first_difference(testing::read_batches(**loader, kRun - 5), slice(*full_, 5, kRun)), "");
}

struct Mismatch {
  std::string what;  // the field the error must name
  LoaderOptions saver, loader;
};

// A state refused by open(options, state) and by load_state, by name; after a refused
// load_state the loader delivers what a twin that never saw the state delivers.
TEST_F(ResumeTest, IncompatibleStatesAreRefusedByNameAndChangeNothing) {
  testing::HangGuard guard(120, "ResumeTest.IncompatibleStates");
  testing::TempDir other_dir, bigger_dir;
  const std::string other_root = testing::make_image_folder(other_dir.path(), kImages, 4, 3, 40, 100);
  const std::string bigger_root = testing::make_image_folder(bigger_dir.path(), kImages + 1, 3, 3, 40, 100);

  std::vector<Mismatch> cases;
  {
    Mismatch m{"batch_size", options(2), options(2)};
    m.loader.batch_size = 5;
    cases.push_back(m);
  }
  {
    Mismatch m{"seed", options(2), options(2)};
    m.loader.seed = 12;
    cases.push_back(m);
  }
  {
    Mismatch m{"rank", options(2), options(2)};
    m.saver.world_size = m.loader.world_size = 2;
    m.loader.rank = 1;
    cases.push_back(m);
  }
  {
    Mismatch m{"dataset", options(2), options(2)};
    m.loader.image_folder = other_root;  // the same count of files, other labels
    cases.push_back(m);
  }
  {
    Mismatch m{"dataset", options(2), options(2)};
    m.loader.image_folder = bigger_root;  // one more file
    cases.push_back(m);
  }
  for (const Mismatch& m : cases) {
    SCOPED_TRACE("a state that differs in " + m.what);
    auto saver = Loader::open(m.saver);
    ASSERT_TRUE(saver.ok()) << saver.status().message();
    ASSERT_EQ(testing::read_batches(**saver, 2).size(), 2u);
    const std::string state = (*saver)->state();

    auto refused = Loader::open(m.loader, state);
    ASSERT_FALSE(refused.ok()) << "open() accepted it";
    EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(m.what), std::string::npos) << refused.status().message();

    auto loader = Loader::open(m.loader);
    auto twin = Loader::open(m.loader);
    ASSERT_TRUE(loader.ok() && twin.ok());
    const Batches a = testing::read_batches(**loader, 2), b = testing::read_batches(**twin, 2);
    const std::string before = (*loader)->state();
    const Status s = (*loader)->load_state(state);
    ASSERT_FALSE(s.ok()) << "load_state accepted it";
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.message().find(m.what), std::string::npos) << s.message();
    EXPECT_EQ((*loader)->state(), before) << "a refused load_state moved the loader";
    EXPECT_EQ(testing::first_difference(testing::read_pass(**loader), testing::read_pass(**twin)), "")
        << "a refused load_state changed what the loader delivers";
  }
}

TEST_F(ResumeTest, MalformedStatesAreRefusedAndChangeNothing) {
  testing::HangGuard guard(60, "ResumeTest.MalformedStates");
  nlohmann::json past_the_end = nlohmann::json::parse((*states_)[3]);
  past_the_end["position"] = 99;
  nlohmann::json negative = nlohmann::json::parse((*states_)[3]);
  negative["position"] = -1;
  const std::vector<std::string> bad = {
      "", "hello", "{}", "[1,2]", (*states_)[3].substr(0, 40), past_the_end.dump(), negative.dump()};
  auto loader = Loader::open(options(2));
  auto twin = Loader::open(options(2));
  ASSERT_TRUE(loader.ok() && twin.ok());
  testing::read_batches(**loader, 3);
  testing::read_batches(**twin, 3);
  for (const std::string& state : bad) {
    SCOPED_TRACE("state '" + state + "'");
    const std::string before = (*loader)->state();
    const Status s = (*loader)->load_state(state);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.message();
    EXPECT_EQ((*loader)->state(), before);
    if (!state.empty()) {  // open(options, "") is open(options)
      auto refused = Loader::open(options(1), state);
      EXPECT_FALSE(refused.ok()) << "open() accepted it";
    }
  }
  EXPECT_EQ(testing::first_difference(testing::read_batches(**loader, 6), testing::read_batches(**twin, 6)),
            "");
}

}  // namespace
}  // namespace forkfeed
