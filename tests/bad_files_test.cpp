// Bad files (invariant 1: skipped samples are counted, never silent), the spawn start
// method (invariant 4: the same batches as fork), and misuse: next() past the end,
// batches that outlive their loader, a loader destroyed with work in flight, every slot
// held by the caller (invariant 7: no crash, no leak, no child left).
//
// Over 300 lines on purpose: one case per kind of bad input or misuse, all read through
// the same fixture and reference; splitting it would copy the fixture.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::Batches;
using testing::BatchRecord;
using namespace std::chrono_literals;

constexpr std::uint32_t kGood = 20;
constexpr std::uint32_t kSize = 16;
constexpr std::uint64_t kSampleBytes = kSize * kSize * 3;
constexpr std::uint64_t kMaxPixels = 3000;  // every good image is at most 40 x 53 = 2120 pixels

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string file_name(std::string_view path) { return std::filesystem::path(path).filename().string(); }

struct BadFile {
  std::string name;                  // its file name
  std::vector<std::string> reasons;  // one of these words must be in its error
};

// A dataset of 20 good images (short side 24..40) and 4 bad ones, one in each of the
// batches 1..4 of 4 in index order (class_000 holds the even images, class_001 the odd).
class BadFilesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), kGood, 2, 9, 24, 40);
    const std::string c0 = root_ + "/class_000/", c1 = root_ + "/class_001/";
    {  // the first half of a real baseline JPEG
      std::ifstream in(c0 + "img_00000.jpg", std::ios::binary);
      const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ASSERT_GT(whole.size(), 200u);
      std::ofstream(c0 + "img_00008_truncated.jpg", std::ios::binary) << whole.substr(0, whole.size() / 2);
    }
    { std::ofstream(c0 + "img_00014_zero.jpg", std::ios::binary); }
    { std::ofstream(c1 + "img_00003_text.jpg") << "this is not a JPEG but plain text\nsecond line\n"; }
    {
      cv::Mat huge(60, 60, CV_8UC3);
      cv::randu(huge, 0, 255);
      ASSERT_TRUE(cv::imwrite(c1 + "img_00011_huge.jpg", huge));  // 3600 pixels
    }
    bad_ = new std::vector<BadFile>{
        {"img_00008_truncated.jpg", {"truncat", "premature"}},
        {"img_00014_zero.jpg", {"empty", "0 bytes", "zero"}},
        {"img_00003_text.jpg", {"not a", "not an image", "corrupt", "cannot decode"}},
        {"img_00011_huge.jpg", {"pixels", "too large"}},
    };
  }
  static void TearDownTestSuite() {
    delete bad_;
    delete dir_;
  }
  void TearDown() override {
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its loader";
  }

  static LoaderOptions options(OnError on_error) {
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = 2;
    o.batch_size = 4;
    o.size = kSize;
    o.seed = 3;
    o.on_error = on_error;
    o.max_pixels = kMaxPixels;
    o.log_level = "off";  // the bad files are logged, on purpose
    return o;
  }

  // Dataset index -> position in bad_, for the bad files of `index`.
  static std::map<std::uint64_t, std::size_t> bad_indices(const DatasetIndex& index) {
    std::map<std::uint64_t, std::size_t> out;
    for (std::uint64_t i = 0; i < index.size(); ++i) {
      for (std::size_t b = 0; b < bad_->size(); ++b) {
        if (file_name(index.path(i)) == (*bad_)[b].name) out[i] = b;
      }
    }
    return out;
  }

  // Eval-transform pixels of every good file, by path, from a manifest that lists only them.
  static std::map<std::string, std::vector<std::uint8_t>> good_pixels(const DatasetIndex& index) {
    const auto bad = bad_indices(index);
    const std::string manifest = dir_->path() + "/good.tsv";
    {
      std::ofstream out(manifest);
      for (std::uint64_t i = 0; i < index.size(); ++i) {
        if (!bad.count(i)) out << index.path(i) << '\t' << index.label(i) << '\n';
      }
    }
    LoaderOptions o = options(OnError::kFail);
    o.image_folder.clear();
    o.manifest = manifest;
    o.transform = "eval";
    o.shuffle = false;
    std::map<std::string, std::vector<std::uint8_t>> out;
    auto loader = Loader::open(o);
    EXPECT_TRUE(loader.ok()) << loader.status().message();
    if (!loader.ok()) return out;
    for (const BatchRecord& b : testing::read_pass(**loader)) {
      for (std::size_t k = 0; k < b.indices.size(); ++k) {
        const auto* p = b.pixels.data() + k * kSampleBytes;
        out[std::string((*loader)->dataset().path(b.indices[k]))].assign(p, p + kSampleBytes);
      }
    }
    EXPECT_EQ(out.size(), kGood);
    return out;
  }

  static testing::TempDir* dir_;
  static std::string root_;
  static std::vector<BadFile>* bad_;
};
testing::TempDir* BadFilesTest::dir_ = nullptr;
std::string BadFilesTest::root_;
std::vector<BadFile>* BadFilesTest::bad_ = nullptr;

TEST_F(BadFilesTest, TheDatasetIsAsPlanned) {
  auto loader = Loader::open(options(OnError::kSkip));
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const DatasetIndex& index = (*loader)->dataset();
  ASSERT_EQ(index.size(), kGood + 4);
  const auto bad = bad_indices(index);
  ASSERT_EQ(bad.size(), 4u);
  std::set<std::uint64_t> batches;
  for (const auto& entry : bad) batches.insert(entry.first / 4);
  EXPECT_EQ(batches, (std::set<std::uint64_t>{1, 2, 3, 4})) << "one bad file in each of batches 1..4";
}

// skip: exactly the 4 bad files are left out, counted once per epoch; every good sample
// comes exactly once per epoch, with its own label and its own pixels (the batch was
// compacted correctly).
TEST_F(BadFilesTest, SkipCountsExactlyTheBadFilesAndDeliversEveryOtherSampleOnce) {
  testing::HangGuard guard(60, "BadFilesTest.Skip");
  for (const char* name : {"eval", "train"}) {
    const std::string transform = name;
    SCOPED_TRACE(transform + " transform");
    LoaderOptions o = options(OnError::kSkip);
    o.transform = transform;
    o.workers = transform == "eval" ? 2 : 3;
    auto opened = Loader::open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Loader& loader = **opened;
    const DatasetIndex& index = loader.dataset();
    const auto bad = bad_indices(index);
    const auto pixels =
        transform == "eval" ? good_pixels(index) : std::map<std::string, std::vector<std::uint8_t>>{};
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      SCOPED_TRACE("epoch " + std::to_string(epoch));
      const Batches pass = testing::read_pass(loader);
      std::multiset<std::uint64_t> seen;
      std::size_t short_batches = 0;
      for (const BatchRecord& b : pass) {
        ASSERT_EQ(b.epoch, epoch);
        ASSERT_LE(b.indices.size(), 4u);
        ASSERT_EQ(b.labels.size(), b.indices.size());
        ASSERT_EQ(b.pixels.size(), b.indices.size() * kSampleBytes);
        short_batches += b.indices.size() < 4 ? 1 : 0;
        for (std::size_t k = 0; k < b.indices.size(); ++k) {
          const std::uint64_t i = b.indices[k];
          seen.insert(i);
          EXPECT_EQ(b.labels[k], index.label(i)) << "batch " << b.position << " sample " << k;
          if (!pixels.empty()) {
            const auto it = pixels.find(std::string(index.path(i)));
            ASSERT_NE(it, pixels.end()) << index.path(i);
            EXPECT_TRUE(std::equal(it->second.begin(), it->second.end(), b.pixels.begin() + k * kSampleBytes))
                << "batch " << b.position << " sample " << k << " (" << index.path(i)
                << ") holds another sample's pixels";
          }
        }
      }
      for (std::uint64_t i = 0; i < index.size(); ++i) {
        EXPECT_EQ(seen.count(i), bad.count(i) ? 0u : 1u) << index.path(i);
      }
      EXPECT_GE(short_batches, 1u);
      const LoaderStats stats = loader.stats();
      EXPECT_EQ(stats.skipped_samples, 4 * (epoch + 1)) << "each bad file once per epoch";
      EXPECT_EQ(stats.delivered_samples, kGood * (epoch + 1));
      EXPECT_EQ(stats.worker_restarts, 0u) << "a bad file crashed a worker";
    }
  }
}

// fail (in index order): batch 0 comes, then batch 1 is an error naming its truncated
// file and why, and the pass goes on: each bad file's batch is an error naming it, every
// other batch is delivered, in order; and the next epoch does the same.
TEST_F(BadFilesTest, FailNamesTheFirstBadFileAfterEveryEarlierBatch) {
  testing::HangGuard guard(60, "BadFilesTest.Fail");
  LoaderOptions o = options(OnError::kFail);
  o.shuffle = false;
  auto opened = Loader::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Loader& loader = **opened;
  const auto bad = bad_indices(loader.dataset());
  ASSERT_EQ(bad.size(), 4u);
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    SCOPED_TRACE("epoch " + std::to_string(epoch));
    // What each next() gave: a batch position, or an error (-1 - which bad file).
    std::vector<std::uint64_t> delivered;
    std::vector<std::string> errors;
    bool ended = false;
    for (int calls = 0; calls < 20 && !ended; ++calls) {
      auto b = loader.next();
      if (!b.ok()) {
        EXPECT_EQ(b.status().code(), Status::Code::kBadData) << b.status().message();
        errors.push_back(b.status().message());
        if (errors.size() == 1) {
          const std::uint64_t first_bad = bad.begin()->first;
          EXPECT_EQ(delivered.size(), first_bad / 4) << "the batches before the first bad one were delivered";
          for (std::size_t p = 0; p < delivered.size(); ++p) EXPECT_EQ(delivered[p], p);
        }
      } else if (!b->has_value()) {
        ended = true;
      } else {
        delivered.push_back((**b).index());
        EXPECT_EQ((**b).size(), 4u);
        for (std::uint64_t i : (**b).sample_indices()) EXPECT_FALSE(bad.count(i)) << "a bad file delivered";
      }
    }
    EXPECT_TRUE(ended);
    EXPECT_EQ(delivered, (std::vector<std::uint64_t>{0, 5})) << "the good batches";
    ASSERT_EQ(errors.size(), 4u);
    std::size_t e = 0;
    for (const auto& entry : bad) {  // in index order, which is delivery order here
      const BadFile& file = (*bad_)[entry.second];
      const std::string& message = errors[e++];
      EXPECT_NE(message.find(file.name), std::string::npos)
          << "error " << e << " names another file: " << message;
      const bool says_why = std::any_of(file.reasons.begin(), file.reasons.end(), [&](const std::string& r) {
        return lower(message).find(r) != std::string::npos;
      });
      EXPECT_TRUE(says_why) << "error " << e << " does not say why: " << message;
    }
    EXPECT_EQ(loader.stats().worker_restarts, 0u) << "a bad file crashed a worker";
  }
}

// start_method=spawn: the same batches, to the byte, as fork, for both dtypes; and the
// workers really are forkfeed-worker processes.
TEST(BadFilesSpawnTest, SpawnDeliversBitIdenticalBatchesToFork) {
  testing::HangGuard guard(60, "BadFilesSpawnTest");
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 21, 3, 4, 40, 100);
  for (DType dtype : {DType::kUint8, DType::kFloat32}) {
    SCOPED_TRACE(std::string(to_string(dtype)));
    Batches runs[2];
    for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
      LoaderOptions o;
      o.image_folder = root;
      o.workers = 2;
      o.batch_size = 5;
      o.size = 20;
      o.seed = 77;
      o.dtype = dtype;
      o.start_method = method;
      o.log_level = "error";
      auto loader = Loader::open(o);
      ASSERT_TRUE(loader.ok()) << loader.status().message();
      const auto workers = testing::live_children();
      ASSERT_EQ(workers.size(), 2u);
      for (pid_t pid : workers) {
        std::error_code ec;
        const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
        EXPECT_EQ(exe.filename() == "forkfeed-worker", method == StartMethod::kSpawn)
            << to_string(method) << " worker runs " << exe;
      }
      Batches& run = runs[method == StartMethod::kSpawn ? 1 : 0];
      run = testing::read_pass(**loader);
      const Batches second = testing::read_pass(**loader);
      run.insert(run.end(), second.begin(), second.end());
    }
    EXPECT_EQ(runs[0].size(), 10u);
    EXPECT_EQ(testing::first_difference(runs[1], runs[0]), "") << "spawn differs from fork";
  }
  EXPECT_TRUE(testing::children_of(::getpid()).empty());
}

// max_file_bytes: a file over it is bad data, refused before it is read (a worker would
// hold all of it): skipped and counted, or an error naming the file and the limit. The
// large file is a good JPEG with a sparse tail of zeros, which decoders ignore.
class MaxFileBytesTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kLimit = 256 << 10;  // every image here is a few KiB

  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), 8, 2, 4, 24, 40);
    for (const auto& entry : std::filesystem::directory_iterator(root_ + "/class_001")) {
      if (big_.empty() || entry.path().string() < big_) big_ = entry.path().string();
    }
    ASSERT_FALSE(big_.empty());
    std::filesystem::resize_file(big_, 4 * kLimit);
  }
  LoaderOptions options(OnError on_error, std::uint64_t max_file_bytes) const {
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = 1;
    o.batch_size = 4;
    o.size = kSize;
    o.on_error = on_error;
    o.max_file_bytes = max_file_bytes;
    o.log_level = "off";
    return o;
  }
  testing::TempDir dir_;
  std::string root_;
  std::string big_;
};

TEST_F(MaxFileBytesTest, SkipLeavesOutOnlyTheFileOverTheLimit) {
  testing::HangGuard guard(60, "MaxFileBytesTest.Skip");
  for (const std::uint64_t limit : {4 * kLimit, kLimit}) {
    SCOPED_TRACE("max_file_bytes " + std::to_string(limit));
    auto loader = Loader::open(options(OnError::kSkip, limit));
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    const Batches pass = testing::read_pass(**loader);
    const bool over = limit < 4 * kLimit;
    EXPECT_EQ((*loader)->stats().skipped_samples, over ? 1u : 0u) << "the large file is otherwise good";
    EXPECT_EQ(testing::indices_of(pass).size(), over ? 7u : 8u);
  }
}

TEST_F(MaxFileBytesTest, FailNamesTheFileAndTheLimit) {
  testing::HangGuard guard(60, "MaxFileBytesTest.Fail");
  auto loader = Loader::open(options(OnError::kFail, kLimit));
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  std::vector<std::string> errors;
  for (int calls = 0; calls < 10; ++calls) {
    auto b = (*loader)->next();
    if (!b.ok()) {
      EXPECT_EQ(b.status().code(), Status::Code::kBadData);
      errors.push_back(b.status().message());
    } else if (!b->has_value()) {
      break;
    }
  }
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(big_), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("max_file_bytes " + std::to_string(kLimit)), std::string::npos) << errors[0];
}

TEST(MaxFileBytesOption, ZeroIsRefused) {
  LoaderOptions o;
  o.image_folder = "/nowhere";
  o.max_file_bytes = 0;
  const Status s = validate(o);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.message();
  EXPECT_NE(s.message().find("max_file_bytes"), std::string::npos) << s.message();
}

class BadFilesMisuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), 18, 2, 8, 40, 100);
    fds_ = testing::open_fds();
  }
  void TearDown() override {
    EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "a worker outlived its loader";
    EXPECT_EQ(testing::open_fds(), fds_) << "an fd outlived its loader";
  }
  LoaderOptions options(std::uint32_t workers, std::uint32_t prefetch = 2) const {
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = workers;
    o.prefetch = prefetch;
    o.batch_size = 4;  // 5 batches: 4 of 4, 1 of 2
    o.size = kSize;
    o.seed = 1;
    o.log_level = "error";
    return o;
  }
  testing::TempDir dir_;
  std::string root_;
  int fds_ = 0;
};

// After next() said the pass is over, next() goes on with the following epoch, again and again.
TEST_F(BadFilesMisuseTest, NextAfterTheEndStartsTheNextEpoch) {
  testing::HangGuard guard(60, "BadFilesMisuseTest.NextAfterTheEnd");
  auto loader = Loader::open(options(2)).value_or_throw();
  auto reference = Loader::open(options(1)).value_or_throw();
  for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
    SCOPED_TRACE("epoch " + std::to_string(epoch));
    const Batches pass = testing::read_pass(*loader);  // ends with the nullopt
    ASSERT_FALSE(pass.empty());
    EXPECT_EQ(pass.front().epoch, epoch);
    EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 18), "");
    EXPECT_TRUE(reference->set_epoch(epoch).ok());
    EXPECT_EQ(testing::first_difference(pass, testing::read_pass(*reference)), "");
  }
  // A range-for after passes read with next() is the next epoch too.
  Batches pass;
  for (Batch& b : *loader) pass.emplace_back(b);
  ASSERT_FALSE(pass.empty());
  EXPECT_EQ(pass.front().epoch, 4u);
  EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 18), "");
}

// Batches still held when the loader is destroyed stay readable, unchanged, and can be
// released afterwards; the workers are gone meanwhile.
TEST_F(BadFilesMisuseTest, BatchesHeldPastTheLoaderStayReadable) {
  testing::HangGuard guard(60, "BadFilesMisuseTest.BatchesHeldPastTheLoader");
  std::vector<Batch> held;
  std::vector<BatchRecord> copies;
  {
    auto loader = Loader::open(options(2)).value_or_throw();  // 5 slots
    for (int i = 0; i < 3; ++i) {
      auto b = loader->next().value_or_throw();
      ASSERT_TRUE(b.has_value());
      copies.emplace_back(*b);
      held.push_back(std::move(*b));
    }
    auto fourth = loader->next().value_or_throw();  // dropped while the loader lives
  }
  EXPECT_TRUE(testing::children_of(::getpid()).empty()) << "the workers went with the loader";
  for (std::size_t i = 0; i < held.size(); ++i) {
    EXPECT_TRUE(BatchRecord(held[i]) == copies[i]) << "held batch " << i << " changed";
    EXPECT_EQ(held[i].shape()[0], static_cast<std::int64_t>(held[i].size()));
  }
  held[1].release();
  EXPECT_TRUE(held[1].empty());
  held.clear();  // the last lease unmaps the arena
}

// Destroying a loader at random moments, with tasks in flight, a batch held or not, and
// once with a stopped worker: no crash, no child, no fd left.
TEST_F(BadFilesMisuseTest, DestroyingTheLoaderWithTasksInFlight) {
  testing::HangGuard guard(60, "BadFilesMisuseTest.DestroyingWithTasksInFlight");
  std::mt19937 rng(12);
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const bool stop_one = round == 5;
    Batch kept;
    {
      auto loader = Loader::open(options(3, 3)).value_or_throw();
      const int reads = static_cast<int>(rng() % 4);
      for (int i = 0; i < reads; ++i) {
        auto b = loader->next().value_or_throw();
        if (i == 0 && b) kept = std::move(*b);
      }
      if (stop_one) {
        const auto workers = testing::live_children();
        ASSERT_FALSE(workers.empty());
        ::kill(workers[rng() % workers.size()], SIGSTOP);
      }
      if (rng() % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    }
    EXPECT_TRUE(testing::children_of(::getpid()).empty());
    if (!kept.empty()) {
      EXPECT_EQ(kept.size(), 4u);
    }
  }
}

// The caller holds every slot: next() copies the oldest aside instead of waiting forever,
// and the pass goes on, exactly once.
TEST_F(BadFilesMisuseTest, HoldingEverySlotCopiesTheOldestAsideNotAHang) {
  testing::HangGuard guard(60, "BadFilesMisuseTest.HoldingEverySlot");
  auto loader = Loader::open(options(1, 1)).value_or_throw();  // 2 slots
  ASSERT_EQ(loader->stats().slots, 2u);
  std::vector<Batch> held;
  Batches pass;
  for (int i = 0; i < 2; ++i) {
    auto b = loader->next().value_or_throw();
    ASSERT_TRUE(b.has_value());
    pass.emplace_back(*b);
    held.push_back(std::move(*b));
  }
  auto third = loader->next();
  ASSERT_TRUE(third.ok() && third->has_value()) << (third.ok() ? "end of pass" : third.status().message());
  EXPECT_EQ(loader->stats().copied_batches, 1u);
  EXPECT_TRUE(testing::BatchRecord(held.front()) == pass.front()) << "the copy is the batch as it was";
  pass.emplace_back(**third);
  held.push_back(std::move(**third));
  held.front().release();
  const Batches rest = testing::read_pass(*loader);
  pass.insert(pass.end(), rest.begin(), rest.end());
  EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 18), "");
  for (std::size_t p = 0; p < pass.size(); ++p) EXPECT_EQ(pass[p].position, p);
}

}  // namespace
}  // namespace forkfeed
