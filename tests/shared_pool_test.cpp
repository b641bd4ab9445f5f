// Several Loaders on one WorkerPool: each keeps what makes it exact — every epoch
// delivered exactly once, in its own order, with the pixels of a loader that had the
// workers to itself — through worker deaths at random moments, a loader attached mid-way
// or detached mid-pass, a bad file in one of them, a resume on a pool of another size, and
// a forked child that tries to use the pool.
#include "forkfeed/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "forkfeed/loader.h"
#include "loader/loader_internals.h"
#include "process/worker_pool.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::Batches;
using namespace std::chrono_literals;

constexpr std::uint32_t kImages = 24;  // 6 batches of 4 per epoch, one rank
// A pipeline whose every sample takes a worker tens of milliseconds.
constexpr const char* kSlowTransform = "RandomResizedCrop(384), AugMix()";

class SharedPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = new std::string(testing::make_image_folder(dir_->path(), kImages, 3, 31, 30, 90));
  }
  static void TearDownTestSuite() {
    delete root_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(testing::children_of(::getpid()).empty()) << "a child left by another test";
  }
  void TearDown() override {
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its pool";
  }

  // Loader `k` of a test: its own seed, so that each has its own order and crops.
  static LoaderOptions options(std::uint32_t k, const std::string& root = *root_) {
    LoaderOptions o = testing::small_options(root, 2, 4);
    o.seed = 100 + k;
    o.log_level = "off";  // deaths are expected here
    return o;
  }

  static std::shared_ptr<WorkerPool> pool(std::uint32_t workers) {
    auto p = WorkerPool::open({.workers = workers, .log_level = "off"});
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? std::move(p).value() : nullptr;
  }
  static std::unique_ptr<Loader> open(const LoaderOptions& o, std::shared_ptr<WorkerPool> p,
                                      std::string_view state = {}) {
    auto loader = Loader::open(o, state, std::move(p));
    EXPECT_TRUE(loader.ok()) << loader.status().message();
    return loader.ok() ? std::move(loader).value() : nullptr;
  }

  // `epochs` undisturbed passes of loader `k`, on workers of its own.
  static Batches reference(const LoaderOptions& o, std::uint64_t epochs) {
    auto loader = testing::open_loader(o);
    Batches run;
    for (std::uint64_t e = 0; loader && e < epochs; ++e) {
      Batches pass = testing::read_pass(*loader);
      run.insert(run.end(), pass.begin(), pass.end());
    }
    return run;
  }

  static testing::TempDir* dir_;
  static std::string* root_;
  testing::HangGuard guard_{280, "SharedPoolTest: a loader that should have delivered"};
};

testing::TempDir* SharedPoolTest::dir_ = nullptr;
std::string* SharedPoolTest::root_ = nullptr;

TEST_F(SharedPoolTest, SixLoadersOnTwoWorkersAreEachExactThroughRandomWorkerDeaths) {
  constexpr std::uint32_t kLoaders = 6;
  constexpr std::uint64_t kEpochs = 2;
  std::vector<Batches> expected;
  for (std::uint32_t k = 0; k < kLoaders; ++k) expected.push_back(reference(options(k), kEpochs));

  auto workers = pool(2);
  ASSERT_NE(workers, nullptr);
  std::vector<std::unique_ptr<Loader>> loaders;
  for (std::uint32_t k = 0; k < kLoaders; ++k) {
    LoaderOptions o = options(k);
    o.max_worker_restarts = 100;
    loaders.push_back(open(o, workers));
    ASSERT_NE(loaders.back(), nullptr);
  }
  EXPECT_EQ(workers->loaders(), kLoaders);
  EXPECT_EQ(testing::live_children().size(), 2u) << "the loaders started workers of their own";

  // Round robin over the loaders, a batch each, killing a worker every other round.
  std::mt19937 rng(7);
  std::vector<Batches> got(kLoaders);
  std::vector<std::uint64_t> ends(kLoaders, 0);
  int kills = 0;
  for (std::uint64_t step = 0; step < 1000; ++step) {
    bool all_done = true;
    for (std::uint32_t k = 0; k < kLoaders; ++k) {
      if (ends[k] == kEpochs) continue;
      all_done = false;
      auto next = loaders[k]->next();
      ASSERT_TRUE(next.ok()) << "loader " << k << ": " << next.status().message();
      if (next->has_value()) {
        got[k].emplace_back(**next);
      } else {
        ++ends[k];
      }
    }
    if (all_done) break;
    if (step % 2 == 1) {  // a random worker, at whatever point it is
      ::kill(WorkerPool::Impl::of(*workers).pid(rng() % 2), SIGKILL);
      ++kills;
    }
  }
  EXPECT_GE(kills, 6);
  for (std::uint32_t k = 0; k < kLoaders; ++k) {
    EXPECT_EQ(testing::first_difference(got[k], expected[k]), "") << "loader " << k;
  }
}

TEST_F(SharedPoolTest, ALoaderAttachedMidwayGetsBatchesWhileAnotherKeepsReading) {
  auto workers = pool(1);
  auto busy = open(options(0), workers);
  ASSERT_NE(busy, nullptr);
  (void)testing::read_batches(*busy, 3);
  const Batches expected = reference(options(1), 1);
  auto late = open(options(1), workers);
  ASSERT_NE(late, nullptr);
  // The busy one keeps its slots full the whole time; the late one still gets its share.
  Batches got;
  for (int i = 0; i < 100 && got.size() < expected.size(); ++i) {
    (void)testing::read_batches(*busy, 1);
    auto next = late->next();
    ASSERT_TRUE(next.ok()) << next.status().message();
    ASSERT_TRUE(next->has_value());
    got.emplace_back(**next);
  }
  EXPECT_EQ(testing::first_difference(got, expected), "");
}

TEST_F(SharedPoolTest, ALoaderDestroyedMidPassLeavesTheOthersExact) {
  const Batches expected = reference(options(1), 2);
  auto workers = pool(2);
  auto staying = open(options(1), workers);
  Batches got = testing::read_batches(*staying, 2);
  {
    auto leaving = open(options(2), workers);
    ASSERT_NE(leaving, nullptr);
    (void)testing::read_batches(*leaving, 2);  // and its other slots in flight
    EXPECT_EQ(workers->loaders(), 2u);
  }
  EXPECT_EQ(workers->loaders(), 1u);
  Batches rest = testing::read_batches(*staying, expected.size() - got.size());
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(got, expected), "");
  EXPECT_EQ(testing::live_children().size(), 2u) << "the pool lost a worker to a loader's going";
}

TEST_F(SharedPoolTest, ABadFileFailsOnlyTheLoaderItBelongsTo) {
  testing::TempDir other;
  const std::string bad_root = testing::make_image_folder(other.path(), 8, 2, 5, 30, 60);
  { std::ofstream(bad_root + "/class_000/img_00002_text.jpg") << "this is not an image\n"; }
  const Batches expected = reference(options(3), 1);
  auto workers = pool(2);
  LoaderOptions failing = options(4, bad_root);
  failing.batch_size = 9;  // one batch: the whole pass
  auto bad = open(failing, workers);
  auto good = open(options(3), workers);
  ASSERT_TRUE(bad && good);
  auto first = bad->next();
  ASSERT_FALSE(first.ok()) << "a pass with a bad file under on_error=fail";
  EXPECT_NE(first.status().message().find("img_00002_text.jpg"), std::string::npos)
      << first.status().message();
  EXPECT_EQ(testing::first_difference(testing::read_pass(*good), expected), "");
  EXPECT_EQ(testing::live_children().size(), 2u);
}

TEST_F(SharedPoolTest, AStateTakenOnOnePoolResumesExactlyOnAPoolOfAnotherSize) {
  const LoaderOptions o = options(5);
  const Batches expected = reference(o, 2);
  std::string state;
  Batches got;
  {
    auto three = pool(3);
    auto loader = open(o, three);
    ASSERT_NE(loader, nullptr);
    got = testing::read_batches(*loader, 8);  // into the second epoch
    state = loader->state();
  }
  auto one = pool(1);
  auto resumed = open(o, one, state);
  ASSERT_NE(resumed, nullptr);
  Batches rest = testing::read_pass(*resumed);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(got, expected), "");
}

// A loader's task_timeout is for its own samples: a worker stuck (here stopped) in
// another loader's sample, which set none, is that loader's business.
TEST_F(SharedPoolTest, ALoadersTaskTimeoutDoesNotKillAWorkerInAnotherLoadersSample) {
  testing::TempDir big;
  const std::string root = testing::make_image_folder(big.path(), 24, 2, 8, 500, 700);
  auto workers = pool(1);
  LoaderOptions patient = options(8, root);  // no task_timeout
  const Batches expected = reference(patient, 1);
  auto slow = open(patient, workers);
  LoaderOptions hasty = options(9);
  hasty.task_timeout_ms = 200;
  auto quick = open(hasty, workers);
  ASSERT_TRUE(slow && quick);
  Batches got = testing::read_batches(*slow, 1);  // its other tasks are queued on the worker
  // Stop the worker inside one of the patient loader's samples (the quick one has issued
  // nothing yet, so any sample in hand is the patient one's).
  const WorkerState& state = WorkerPool::Impl::of(*workers).state(0);
  const pid_t worker = WorkerPool::Impl::of(*workers).pid(0);
  bool in_sample = false;
  for (int attempt = 0; attempt < 200 && !in_sample; ++attempt) {
    ASSERT_TRUE(testing::eventually([&] { return state.current_sample.load() != kNoSample; }, 10s));
    ASSERT_EQ(::kill(worker, SIGSTOP), 0);
    in_sample = testing::eventually([&] { return testing::process_state(worker) == 'T'; }, 5s) &&
                state.current_sample.load() != kNoSample;
    if (!in_sample) ::kill(worker, SIGCONT);  // stopped between two samples: again
  }
  ASSERT_TRUE(in_sample) << "never caught the worker inside a sample";
  // The quick loader waits its turn (here, until interrupted) instead of killing it.
  std::thread interrupter([&] {
    std::this_thread::sleep_for(1500ms);
    quick->interrupt();
  });
  auto waited = quick->next();
  interrupter.join();
  ASSERT_FALSE(waited.ok()) << "a batch, though the only worker is stopped";
  EXPECT_EQ(waited.status().code(), Status::Code::kCancelled) << waited.status().message();
  EXPECT_EQ(WorkerPool::Impl::of(*workers).pid(0), worker) << "killed for another loader's slow sample";
  ASSERT_EQ(::kill(worker, SIGCONT), 0);
  Batches rest = testing::read_pass(*slow);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(got, expected), "");
  EXPECT_EQ(slow->stats().worker_restarts, 0u);
  EXPECT_EQ(testing::read_pass(*quick).size(), 6u);
}

// A loader's long batch does not hold a worker to the end: between its samples the
// worker takes turns with another loader that has work (workers/fair_share.h), so a loader
// of small batches is served while the long one is part-way, and both stay exact.
TEST_F(SharedPoolTest, ALoaderOfSmallBatchesIsServedBetweenTheSamplesOfAnothersLongBatch) {
  testing::TempDir big;
  const std::string root = testing::make_image_folder(big.path(), 24, 2, 8, 500, 700);
  auto workers = pool(1);
  LoaderOptions heavy = options(10, root);
  heavy.workers = 1;
  heavy.batch_size = 24;  // the whole pass, one task of slow samples
  heavy.transform = kSlowTransform;
  heavy.size = 0;
  LoaderOptions light = options(11);
  light.workers = 1;
  light.batch_size = 1;
  const Batches expected_heavy = reference(heavy, 1), expected_light = reference(light, 1);
  auto a = open(heavy, workers);
  ASSERT_NE(a, nullptr);
  Batches got_heavy;
  std::thread reader([&] { got_heavy = testing::read_batches(*a, 1); });
  // The heavy batch is in the worker's hands before the light loader exists.
  const WorkerState& state = WorkerPool::Impl::of(*workers).state(0);
  EXPECT_TRUE(testing::eventually([&] { return state.current_sample.load() != kNoSample; }, 30s));
  const std::uint64_t heavy_id = state.current_loader.load();
  auto b = open(light, workers);
  Batches got_light = b ? testing::read_batches(*b, 3) : Batches{};
  // The heavy batch was set aside for those, not finished first: the worker goes back to
  // it. (Its one task is the heavy loader's whole pass: once done, it never comes back.)
  EXPECT_TRUE(testing::eventually(
      [&] { return state.current_sample.load() != kNoSample && state.current_loader.load() == heavy_id; },
      10s))
      << "the light loader waited for the whole of the heavy batch";
  // Its worker time counts as the worker goes, not only when the batch is done.
  EXPECT_GT(LoaderInternals::worker_ns(*a), 0u) << "a batch part-way counts no worker time";
  if (b) {
    Batches rest = testing::read_pass(*b);
    got_light.insert(got_light.end(), rest.begin(), rest.end());
  }
  reader.join();
  EXPECT_EQ(testing::first_difference(got_heavy, expected_heavy), "");
  EXPECT_EQ(testing::first_difference(got_light, expected_light), "");
}

// Tasks set aside part-way are still exactly once and current: a worker killed while
// holding several loaders' tasks, and a reset while one is set aside, leave every loader
// its exact pass.
TEST_F(SharedPoolTest, TasksSetAsideBetweenSamplesStayExactThroughWorkerDeathsAndResets) {
  testing::TempDir big;
  const std::string root = testing::make_image_folder(big.path(), 12, 2, 9, 500, 700);
  LoaderOptions heavy = options(12, root);
  heavy.batch_size = 6;
  heavy.transform = kSlowTransform;
  heavy.size = 0;
  heavy.max_worker_restarts = 100;
  LoaderOptions light = options(13);
  light.batch_size = 1;
  light.max_worker_restarts = 100;
  const Batches expected_heavy = reference(heavy, 2), expected_light = reference(light, 2);
  auto workers = pool(2);
  auto a = open(heavy, workers);
  auto b = open(light, workers);
  ASSERT_TRUE(a && b);
  Batches got_heavy, got_light;
  // A reset of the light loader while its tasks may be set aside: its pass starts again.
  (void)testing::read_batches(*b, 2);
  ASSERT_TRUE(b->reset().ok());
  std::mt19937 rng(11);
  std::uint64_t heavy_ends = 0, light_ends = 0;
  int kills = 0;
  for (int step = 0; step < 2000 && (heavy_ends < 2 || light_ends < 2); ++step) {
    if (light_ends < 2) {
      auto next = b->next();
      ASSERT_TRUE(next.ok()) << next.status().message();
      if (next->has_value()) {
        got_light.emplace_back(**next);
      } else {
        ++light_ends;
      }
    }
    if (heavy_ends < 2 && step % 4 == 0) {
      auto next = a->next();
      ASSERT_TRUE(next.ok()) << next.status().message();
      if (next->has_value()) {
        got_heavy.emplace_back(**next);
      } else {
        ++heavy_ends;
      }
    }
    if (step % 6 == 5 && kills < 6) {  // a random worker, at whatever point it is
      ::kill(WorkerPool::Impl::of(*workers).pid(rng() % 2), SIGKILL);
      ++kills;
    }
  }
  EXPECT_GE(kills, 3);
  EXPECT_EQ(testing::first_difference(got_heavy, expected_heavy), "");
  EXPECT_EQ(testing::first_difference(got_light, expected_light), "");
}

TEST_F(SharedPoolTest, AForkedChildCannotAttachToItsParentsPool) {
  const Batches expected = reference(options(6), 1);
  auto workers = pool(2);
  auto loader = open(options(6), workers);
  ASSERT_NE(loader, nullptr);
  Batches got = testing::read_batches(*loader, 2);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A loader in the child on the parent's pool would send the parent's workers an arena
    // under an id the parent may give too.
    auto refused = Loader::open(options(7), workers);
    const bool named = !refused.ok() && refused.status().message().find(
                                            "this WorkerPool was opened by process") != std::string::npos;
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child attached, or failed otherwise";
  Batches rest = testing::read_pass(*loader);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::first_difference(got, expected), "");
}

TEST_F(SharedPoolTest, ThePoolStopsWithItsLastOwner) {
  auto workers = pool(2);
  auto loader = open(options(0), workers);
  const std::vector<pid_t> started = testing::live_children();
  ASSERT_EQ(started.size(), 2u);
  workers.reset();  // the loader keeps it
  (void)testing::read_batches(*loader, 2);
  EXPECT_EQ(testing::live_children(), started);
  loader.reset();
  EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "the pool outlived its last loader";
}

}  // namespace
}  // namespace forkfeed
