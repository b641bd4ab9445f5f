// Invariant 1 with on_error=skip while the pass is disturbed: resets, worker deaths and
// resumes in any mix never put a label next to another sample, never deliver a bad file,
// and every skipped sample is reported by the loader with its path and the reason. What
// is the machine's fault (out of fds) is never skipped: it stops the loader, naming it.
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <sys/resource.h>
#include <unistd.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/logging.h"
#include "forkfeed/loader.h"
#include "process/worker_pool.h"
#include "tests/testing/processes.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::BatchRecord;

constexpr std::uint32_t kGood = 120;
constexpr std::uint32_t kClasses = 10;
constexpr std::uint32_t kBadPerClass = 3;
constexpr std::uint32_t kBatch = 16;

// While in scope, the loader's log lines go to memory instead of stderr.
class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100000)) {
    auto logger = loader_logger();
    saved_ = logger->sinks();
    logger->sinks() = {sink_};
  }
  ~CapturedLog() { loader_logger()->sinks() = saved_; }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::vector<std::string> lines() const { return sink_->last_formatted(); }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::vector<spdlog::sink_ptr> saved_;
};

// 120 good images in 10 classes, and in every class 3 text files named .jpg.
class SkippedSamplesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), kGood, kClasses, 31, 20, 36);
    for (const auto& entry : std::filesystem::directory_iterator(root_)) {
      for (std::uint32_t b = 0; b < kBadPerClass; ++b) {
        std::ofstream(entry.path() / ("bad_" + std::to_string(b) + ".jpg")) << "not an image\n";
      }
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  void TearDown() override {
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its loader";
  }

  static LoaderOptions options() {
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = 2;
    o.batch_size = kBatch;
    o.size = 8;
    o.seed = 5;
    o.on_error = OnError::kSkip;
    o.max_worker_restarts = 1000;
    o.log_level = "warn";
    return o;
  }

  static bool is_bad(const DatasetIndex& index, std::uint64_t i) {
    return std::filesystem::path(index.path(i)).filename().string().starts_with("bad_");
  }

  // Every sample of `b` is a good file of the dataset, once, with its own label.
  static void expect_consistent(const DatasetIndex& index, const BatchRecord& b) {
    ASSERT_LE(b.indices.size(), kBatch);
    ASSERT_EQ(b.labels.size(), b.indices.size());
    std::set<std::uint64_t> in_batch;
    for (std::size_t k = 0; k < b.indices.size(); ++k) {
      const std::uint64_t i = b.indices[k];
      ASSERT_LT(i, index.size()) << "batch " << b.position << " sample " << k;
      EXPECT_EQ(b.labels[k], index.label(i)) << "batch " << b.position << " sample " << k << ": the label of "
                                             << index.path(i) << " is another sample's";
      EXPECT_FALSE(is_bad(index, i)) << "a bad file was delivered: " << index.path(i);
      EXPECT_TRUE(in_batch.insert(i).second) << "sample " << i << " twice in batch " << b.position;
    }
  }

  static testing::TempDir* dir_;
  static std::string root_;
};
testing::TempDir* SkippedSamplesTest::dir_ = nullptr;
std::string SkippedSamplesTest::root_;

// The reported bug: a task cancelled by a reset left its skipped samples behind in the
// worker, and the next task wrote them past its own samples, into the labels.
TEST_F(SkippedSamplesTest, ResetsDeathsAndResumesNeverMislabelASample) {
  testing::HangGuard guard(240, "SkippedSamplesTest.ResetsDeathsAndResumes");
  CapturedLog log;
  std::mt19937 rng(2024);
  auto opened = Loader::open(options());
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  const DatasetIndex& index = loader.dataset();
  ASSERT_EQ(index.size(), kGood + kClasses * kBadPerClass);
  std::vector<std::string> saved;
  std::size_t delivered = 0, kills = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (std::uint32_t n = 1 + rng() % 6; n > 0; --n) {
      auto b = loader.next();
      ASSERT_TRUE(b.ok()) << b.status().message();
      if (!b->has_value()) continue;  // the end of a pass
      expect_consistent(index, BatchRecord(**b));
      delivered += (**b).size();
    }
    switch (rng() % 4) {
      case 0:
      case 1: EXPECT_TRUE(loader.reset().ok()); break;
      case 2:
        if (const auto workers = testing::live_children(); !workers.empty()) {
          ASSERT_EQ(::kill(workers[rng() % workers.size()], SIGKILL), 0);
          ++kills;
        }
        EXPECT_TRUE(loader.reset().ok());
        break;
      case 3:
        if (saved.empty() || rng() % 2 == 0) {
          saved.push_back(loader.state());
        } else {
          const Status s = loader.load_state(saved[rng() % saved.size()]);
          ASSERT_TRUE(s.ok()) << s.message();
        }
        break;
    }
    if (HasFatalFailure() || HasFailure()) return;
  }
  EXPECT_GT(delivered, 2000u);
  EXPECT_GE(kills, 5u);

  // Undisturbed now: one whole pass gives every good sample exactly once.
  EXPECT_TRUE(loader.set_epoch(loader.epoch() + 1).ok());
  std::multiset<std::uint64_t> seen;
  for (const BatchRecord& b : testing::read_pass(loader)) {
    expect_consistent(index, b);
    seen.insert(b.indices.begin(), b.indices.end());
  }
  for (std::uint64_t i = 0; i < index.size(); ++i) {
    EXPECT_EQ(seen.count(i), is_bad(index, i) ? 0u : 1u) << index.path(i);
  }

  // A loader opened from a saved state, with another worker count, agrees too.
  LoaderOptions o = options();
  o.workers = 3;
  auto resumed = Loader::open(o, saved.empty() ? loader.state() : saved.back());
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  for (const BatchRecord& b : testing::read_pass(**resumed)) expect_consistent(index, b);
}

// Every bad file is reported by the loader's own log line, with its path and why: not
// "see the worker log", not an empty line.
TEST_F(SkippedSamplesTest, EverySkipIsLoggedWithItsPathAndReason) {
  testing::HangGuard guard(60, "SkippedSamplesTest.EverySkipIsLogged");
  CapturedLog log;
  auto opened = Loader::open(options());
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  const DatasetIndex& index = loader.dataset();
  testing::read_pass(loader);
  EXPECT_EQ(loader.stats().skipped_samples, kClasses * kBadPerClass);
  const std::vector<std::string> lines = log.lines();
  for (std::uint64_t i = 0; i < index.size(); ++i) {
    if (!is_bad(index, i)) continue;
    const std::string path(index.path(i));
    std::size_t found = 0;
    for (const std::string& line : lines) {
      if (line.find("skipped " + path + ": ") == std::string::npos) continue;
      ++found;
      EXPECT_EQ(line.find("see the worker log"), std::string::npos) << line;
      EXPECT_NE(line.find("decode"), std::string::npos) << "no reason in: " << line;
    }
    EXPECT_EQ(found, 1u) << "the skip of " << path << " is logged once, with its path and reason";
  }
}

// A pass that skipped every sample (RandomCrop(64) of images of 20 to 36 pixels: no
// image passes, which only decoding shows) is an error naming the count, not an end of
// pass: it used to end with 0 images, and forkfeed-bench exited 0. The next call goes on
// with the next epoch. A pass resumed past its start is not judged: its first batches
// may have been delivered to another process.
TEST_F(SkippedSamplesTest, APassThatSkippedEverySampleIsAnErrorNotAnEnd) {
  testing::HangGuard guard(120, "SkippedSamplesTest.APassThatSkippedEverySample");
  LoaderOptions o = options();
  o.size = 0;
  o.transform = "RandomCrop(64)";
  o.log_level = "off";
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  const std::uint64_t all = kGood + kClasses * kBadPerClass;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    auto end = loader.next();
    ASSERT_FALSE(end.ok()) << "epoch " << epoch << " ended as a success with every sample skipped";
    EXPECT_EQ(end.status().code(), Status::Code::kBadData);
    EXPECT_NE(end.status().message().find("every sample of epoch " + std::to_string(epoch) +
                                          "'s pass was skipped (" + std::to_string(all)),
              std::string::npos)
        << end.status().message();
    EXPECT_EQ(loader.stats().skipped_samples, all * (epoch + 1));
    EXPECT_EQ(loader.epoch(), epoch);
  }

  // Resumed at batch 3 of epoch 0 (a state of the same order taken by a loader whose
  // samples pass): the rest of that pass ends quietly; the next epoch, seen whole, does not.
  LoaderOptions passing = options();
  auto saver = Loader::open(passing);
  ASSERT_TRUE(saver.ok()) << saver.status().message();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*saver)->next().ok());
  auto resumed = Loader::open(o, (*saver)->state());
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  auto end = (*resumed)->next();
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_FALSE(end->has_value());
  EXPECT_FALSE((*resumed)->next().ok()) << "epoch 1, seen whole, skipped every sample";

  // One good sample in a pass is a success.
  LoaderOptions some = options();
  some.size = 0;
  some.transform = "RandomCrop(21)";  // images of 20 pixels are skipped, larger ones pass
  auto partly = Loader::open(some);
  ASSERT_TRUE(partly.ok()) << partly.status().message();
  std::uint64_t delivered = 0;
  for (const BatchRecord& b : testing::read_pass(**partly)) delivered += b.indices.size();
  EXPECT_GT(delivered, 0u);
}

// A worker that crashes decoding a file has that file skipped from then on, and the
// loader's line names it and says why (it used to be "skipped " and nothing else). The
// crash is a SIGSEGV sent while the worker's channel says it is decoding a sample: large
// noisy PNGs (no DCT scaling, tens of milliseconds each) keep it decoding nearly all the
// time, and a few tries cover a kill that lands just between two samples.
// Workers that cannot open any file (their fd limit lowered under them: `ulimit -n` too
// tight) would otherwise skip every good sample under on_error=skip. Out of fds is no
// sample's fault: next() fails with the errno named, nothing is skipped, and state()
// resumes at the batch that failed, so a new loader delivers the rest exactly once.
TEST(SkippedSamplesFdTest, OutOfFdsIsAnErrorNotASkip) {
  testing::HangGuard guard(60, "SkippedSamplesFdTest.OutOfFdsIsAnErrorNotASkip");
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 24, 2);
  LoaderOptions o;
  o.image_folder = root;
  o.workers = 2;
  o.prefetch = 1;
  o.batch_size = 4;
  o.size = 16;
  o.on_error = OnError::kSkip;
  o.start_method = StartMethod::kFork;
  o.log_level = "off";
  auto loader = Loader::open(o).value_or_throw();
  testing::Batches run = testing::read_batches(*loader, 1);
  // Every file a worker opens from now on gets EMFILE (fds 0, 1 and 2 stay open).
  const rlimit three{3, 3};
  for (pid_t worker : testing::children_of(::getpid()))
    ASSERT_EQ(::prlimit(worker, RLIMIT_NOFILE, &three, nullptr), 0);
  Status failed;
  while (failed.ok()) {
    auto b = loader->next();
    ASSERT_TRUE(!b.ok() || b->has_value()) << "the pass ended: every sample after the limit was skipped";
    if (b.ok())
      run.emplace_back(**b);
    else
      failed = b.status();
  }
  EXPECT_NE(failed.code(), Status::Code::kBadData) << failed.message();
  EXPECT_NE(failed.message().find("Too many open files"), std::string::npos) << failed.message();
  EXPECT_EQ(loader->stats().skipped_samples, 0u) << "a good sample was skipped";
  const std::string state = loader->state();
  loader.reset();
  auto resumed = Loader::open(o, state).value_or_throw();
  const testing::Batches rest = testing::read_pass(*resumed);
  run.insert(run.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::exactly_once(testing::indices_of(run), 24), "");
}

TEST(SkippedSamplesCrashTest, AFileThatCrashedAWorkerIsSkippedWithItsPathAndReason) {
  testing::HangGuard guard(120, "SkippedSamplesCrashTest.AFileThatCrashedAWorker");
  testing::TempDir dir;
  const std::string root = dir.path() + "/data";
  std::filesystem::create_directories(root + "/noise");
  constexpr int kImages = 6;
  for (int i = 0; i < kImages; ++i) {
    cv::Mat noise(900, 900, CV_8UC3);
    cv::randu(noise, 0, 255);
    ASSERT_TRUE(cv::imwrite(root + "/noise/" + std::to_string(i) + ".png", noise));
  }
  LoaderOptions o;
  o.image_folder = root;
  o.workers = 1;
  o.batch_size = 2;
  o.size = 8;
  o.on_error = OnError::kSkip;
  o.log_level = "warn";
  bool crashed_on_a_sample = false;
  for (int attempt = 0; attempt < 10 && !crashed_on_a_sample && !::testing::Test::HasFailure(); ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    CapturedLog log;
    // The pool's shared memory shows which sample its worker has in hand.
    auto pool = WorkerPool::open({.workers = 1, .log_level = "warn"});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    auto opened = Loader::open(o, *pool);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Loader& loader = **opened;
    const std::atomic<std::uint64_t>& current = WorkerPool::Impl::of(**pool).state(0).current_sample;
    (void)loader.next();  // the first tasks are issued by the first next()
    // On a starved machine the worker may finish the few samples left before this looks.
    if (!testing::eventually([&] { return current.load() != kNoSample; }, std::chrono::seconds(10))) continue;
    const auto workers = testing::live_children();
    ASSERT_EQ(workers.size(), 1u);
    ASSERT_EQ(::kill(workers[0], SIGSEGV), 0);
    testing::read_pass(loader);
    for (const std::string& line : log.lines()) {
      if (line.find("a worker died decoding it") == std::string::npos) continue;
      crashed_on_a_sample = true;
      EXPECT_NE(line.find("skipped " + root + "/noise/"), std::string::npos) << "no path in: " << line;
      EXPECT_NE(line.find("SIGSEGV"), std::string::npos) << "no reason in: " << line;
      EXPECT_EQ(loader.stats().skipped_samples, 1u);
      EXPECT_EQ(loader.stats().delivered_samples, kImages - 1u) << "every other sample, once";
    }
  }
  EXPECT_TRUE(crashed_on_a_sample) << "no SIGSEGV landed while a sample was decoded";
}

}  // namespace
}  // namespace forkfeed
