// Loader end to end: exactly once, order and pixels independent of worker count,
// pixels equal to an in-process OpenCV reference, sharding, errors.
//
// Over 300 lines on purpose: the Loader's end-to-end promises, each against the same
// in-process OpenCV reference; splitting it would copy the fixture.
#include "forkfeed/loader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "testing/processes.h"
#include "testing/small_options.h"
#include "testing/temp_dataset.h"
#include "transforms/crop.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kImages = 45;

class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), kImages, 4);
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions options(std::uint32_t workers, std::uint32_t batch) {
    LoaderOptions o = testing::small_options(root_, workers, batch);
    o.size = 24;
    o.seed = 5;
    o.log_level = "warn";
    return o;
  }

  static std::unique_ptr<Loader> open(const LoaderOptions& o) { return testing::open_loader(o); }

  struct Pass {
    std::vector<std::uint64_t> indices;
    std::vector<std::int64_t> labels;
    std::vector<std::uint8_t> pixels;
    std::vector<std::uint64_t> batch_sizes;
  };

  static Pass read_pass(Loader& loader) {
    Pass p;
    for (Batch& b : loader) {
      p.indices.insert(p.indices.end(), b.sample_indices().begin(), b.sample_indices().end());
      p.labels.insert(p.labels.end(), b.labels().begin(), b.labels().end());
      const auto* px = static_cast<const std::uint8_t*>(b.data());
      p.pixels.insert(p.pixels.end(), px, px + b.bytes());
      p.batch_sizes.push_back(b.size());
    }
    return p;
  }

  static testing::TempDir* dir_;
  static std::string root_;
};
testing::TempDir* LoaderTest::dir_ = nullptr;
std::string LoaderTest::root_;

TEST_F(LoaderTest, EveryEpochDeliversEverySampleExactlyOnce) {
  for (std::uint32_t workers : {1u, 2u, 4u}) {
    for (std::uint32_t batch : {1u, 7u, 16u, 45u, 64u}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + ", batch " + std::to_string(batch));
      auto loader = open(options(workers, batch));
      ASSERT_TRUE(loader);
      for (int epoch = 0; epoch < 2; ++epoch) {
        const Pass p = read_pass(*loader);
        std::multiset<std::uint64_t> seen(p.indices.begin(), p.indices.end());
        ASSERT_EQ(seen.size(), kImages);
        for (std::uint64_t i = 0; i < kImages; ++i) ASSERT_EQ(seen.count(i), 1u) << "sample " << i;
        for (std::size_t k = 0; k < p.indices.size(); ++k) {
          ASSERT_EQ(p.labels[k], loader->dataset().label(p.indices[k]));
        }
        const std::uint64_t batches = (kImages + batch - 1) / batch;
        ASSERT_EQ(p.batch_sizes.size(), batches);
        ASSERT_EQ(p.batch_sizes.back(), kImages - (batches - 1) * batch) << "last partial batch kept";
      }
    }
  }
}

TEST_F(LoaderTest, SameSeedSameOrderAndPixelsWithOneAndFourWorkers) {
  auto one = open(options(1, 8));
  auto four = open(options(4, 8));
  ASSERT_TRUE(one && four);
  const Pass a = read_pass(*one), b = read_pass(*four);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_TRUE(a.pixels == b.pixels) << "train-transform pixels must not depend on the worker count";
  const Pass a2 = read_pass(*one);
  EXPECT_EQ(one->epoch(), 1u);
  EXPECT_NE(a.indices, a2.indices) << "a different epoch gives a different order";
  EXPECT_FALSE(a.pixels == a2.pixels) << "and different crops";
}

TEST_F(LoaderTest, SetEpochIsRepeatable) {
  auto loader = open(options(2, 8));
  ASSERT_TRUE(loader);
  EXPECT_TRUE(loader->set_epoch(3).ok());
  const Pass a = read_pass(*loader);
  EXPECT_TRUE(loader->set_epoch(3).ok());
  const Pass b = read_pass(*loader);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_TRUE(a.pixels == b.pixels);
}

// torchvision's eval pipeline, written with plain OpenCV in the test.
cv::Mat reference_eval(const std::string& path, int size) {
  cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION), rgb, resized;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  const int shorter = static_cast<int>(std::lround(size / 0.875));
  const int w = rgb.cols, h = rgb.rows;
  const cv::Size to = w <= h ? cv::Size(shorter, shorter * h / w) : cv::Size(shorter * w / h, shorter);
  cv::resize(rgb, resized, to, 0, 0, to.width < w ? cv::INTER_AREA : cv::INTER_LINEAR);
  const int left = static_cast<int>(std::nearbyint((to.width - size) / 2.0));
  const int top = static_cast<int>(std::nearbyint((to.height - size) / 2.0));
  return resized(cv::Rect(left, top, size, size)).clone();
}

TEST_F(LoaderTest, EvalPixelsMatchAnOpenCvReference) {
  LoaderOptions o = options(2, 16);
  o.transform = "eval";
  o.size = 32;
  auto loader = open(o);
  ASSERT_TRUE(loader);
  auto batch = loader->next();
  ASSERT_TRUE(batch.ok() && batch->has_value());
  const Batch& b = **batch;
  EXPECT_EQ(b.shape(), (std::array<std::int64_t, 4>{16, 32, 32, 3}));
  double batch_mean = 0;
  for (std::size_t k = 0; k < b.size(); ++k) {
    const std::string path(loader->dataset().path(b.sample_indices()[k]));
    const cv::Mat expected = reference_eval(path, 32);
    const cv::Mat got(
        32, 32, CV_8UC3,
        const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(b.data()) + k * 32 * 32 * 3));
    cv::Mat diff;
    cv::absdiff(expected, got, diff);
    // The loader decodes only the crop window, DCT-scaled where it can: close to the
    // full-decode reference, not equal (tests/fused_decode_test.cpp measures how close).
    // Another image, or a shifted one, would be tens of levels away.
    const double mean = cv::mean(diff.reshape(1))[0];
    EXPECT_LE(mean, 4.0) << path;
    batch_mean += mean / static_cast<double>(b.size());
  }
  EXPECT_LE(batch_mean, 2.0);
  std::printf("mean |loader - reference| over the batch: %.2f levels\n", batch_mean);
}

TEST_F(LoaderTest, Float32IsNormalisedNchwOfTheSameSample) {
  LoaderOptions o = options(1, 5);
  o.shuffle = false;
  auto u8 = open(o);
  o.dtype = DType::kFloat32;
  auto f32 = open(o);
  ASSERT_TRUE(u8 && f32);
  auto a = u8->next(), b = f32->next();
  ASSERT_TRUE(a.ok() && b.ok());
  const Batch &x = **a, &y = **b;
  EXPECT_EQ(y.shape(), (std::array<std::int64_t, 4>{5, 3, 24, 24}));
  const auto* px = static_cast<const std::uint8_t*>(x.data());
  const auto* pf = static_cast<const float*>(y.data());
  for (int n = 0; n < 5; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 24 * 24; i += 37) {
        const float expected = (px[(n * 24 * 24 + i) * 3 + c] / 255.0f - o.mean[c]) / o.std[c];
        ASSERT_NEAR(pf[(n * 3 + c) * 24 * 24 + i], expected, 1e-4);
      }
    }
  }
}

TEST_F(LoaderTest, RankShardsAreDisjointAndCoverTheDataset) {
  std::map<std::uint64_t, int> seen;
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    LoaderOptions o = options(1, 6);
    o.rank = rank;
    o.world_size = 4;
    auto loader = open(o);
    ASSERT_TRUE(loader);
    EXPECT_EQ(loader->samples_per_epoch(), 12u);
    for (auto i : read_pass(*loader).indices) seen[i]++;
  }
  EXPECT_EQ(seen.size(), kImages);
  int repeats = 0;
  for (auto& [i, n] : seen) repeats += n - 1;
  EXPECT_EQ(repeats, 48 - 45) << "only the wrap-around padding repeats";
}

TEST_F(LoaderTest, DropLastDropsThePartialBatch) {
  LoaderOptions o = options(2, 10);
  o.drop_last = true;
  auto loader = open(o);
  ASSERT_TRUE(loader);
  const Pass p = read_pass(*loader);
  EXPECT_EQ(p.batch_sizes, (std::vector<std::uint64_t>{10, 10, 10, 10}));
}

TEST_F(LoaderTest, ABadFileFailsItsBatchByNameAndThePassGoesOn) {
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 12, 2);
  { std::ofstream(root + "/class_000/zz_broken.jpg") << "this is not a jpeg"; }
  LoaderOptions o = options(2, 4);
  o.image_folder = root;
  o.shuffle = false;
  auto loader = open(o);
  ASSERT_TRUE(loader);
  int errors = 0, delivered = 0;
  while (true) {
    auto b = loader->next();
    if (!b.ok()) {
      ++errors;
      EXPECT_EQ(b.status().code(), Status::Code::kBadData);
      EXPECT_NE(b.status().message().find("zz_broken.jpg"), std::string::npos) << b.status().message();
      continue;
    }
    if (!b->has_value()) break;
    delivered += static_cast<int>((*b)->size());
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(delivered, 13 - 4) << "the other batches are delivered";
}

TEST_F(LoaderTest, StrangeFilesAreErrorsNamingThemNotHangsOrDeaths) {
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 6, 1);
  ASSERT_EQ(::mkfifo((root + "/class_000/a_fifo.jpg").c_str(), 0600), 0);
  ASSERT_TRUE(cv::imwrite(root + "/class_000/b_strip.png", cv::Mat(1, 20000, CV_8UC3, cv::Scalar(1, 2, 3))));
  { std::ofstream(root + "/class_000/c_empty.jpg"); }
  LoaderOptions o = options(2, 1);
  o.image_folder = root;
  o.transform = "eval";
  o.size = 224;  // the strip would resize to 256 x 5120000
  o.shuffle = false;
  auto loader = open(o);
  ASSERT_TRUE(loader);
  std::vector<std::string> errors;
  int delivered = 0;
  while (true) {
    auto b = loader->next();
    if (!b.ok()) {
      errors.push_back(b.status().message());
      continue;
    }
    if (!b->has_value()) break;
    ++delivered;
  }
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("is a FIFO, not a regular file"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find(": " + root + "/class_000/a_fifo.jpg"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("b_strip.png"), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("max_pixels"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("empty file"), std::string::npos) << errors[2];
  EXPECT_EQ(delivered, 6);
}

TEST_F(LoaderTest, AnArenaLargerThanMemoryIsRefused) {
  LoaderOptions o = options(8, 4096);
  o.size = 4096;
  o.prefetch = 4;
  o.dtype = DType::kFloat32;
  const Status s = Loader::open(o).status();
  EXPECT_EQ(s.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(s.message().find("lower batch_size"), std::string::npos) << s.message();
}

// Found from outside: holding every slot stopped the pass ("every batch slot is held").
// Now the oldest batch held is copied aside, unchanged, and its slot goes back to the pass.
TEST_F(LoaderTest, HoldingEverySlotCopiesTheOldestAsideAndThePassGoesOn) {
  LoaderOptions o = options(1, 2);
  o.prefetch = 1;  // 2 slots
  auto loader = open(o);
  ASSERT_TRUE(loader);
  const testing::Batches whole = testing::read_pass(*open(o));
  std::vector<Batch> held;
  for (;;) {
    auto b = loader->next();
    ASSERT_TRUE(b.ok()) << b.status().message();
    if (!b->has_value()) break;
    held.push_back(std::move(**b));
  }
  ASSERT_EQ(held.size(), whole.size());
  ASSERT_GT(held.size(), 3u);
  const LoaderStats stats = loader->stats();
  EXPECT_EQ(stats.copied_batches, held.size() - 2) << "all but the last two slots' batches";
  EXPECT_GT(stats.copied_bytes, 0u);
  const testing::Batches again = testing::read_pass(*loader);  // the slots filled again meanwhile
  EXPECT_EQ(again.size(), whole.size());
  EXPECT_EQ(loader->stats().copied_batches, held.size() - 1) << "one more, for the next pass's first batch";
  for (std::size_t i = 0; i < held.size(); ++i) EXPECT_TRUE(testing::BatchRecord(held[i]) == whole[i]) << i;
}

// Found from outside (a docs example printed 11 or 12): with two workers the copies came
// in pairs, so the pass's last batch, which needs one slot, had two batches copied for it.
// A pass copies aside exactly the batches it needs slots for.
TEST_F(LoaderTest, HoldingEverySlotCopiesNoMoreThanThePassNeeds) {
  LoaderOptions o = options(2, 4);
  o.prefetch = 1;  // 2 x 1 + 1 = 3 slots
  auto loader = open(o);
  ASSERT_TRUE(loader);
  std::vector<Batch> held;
  for (;;) {
    auto b = loader->next();
    ASSERT_TRUE(b.ok()) << b.status().message();
    if (!b->has_value()) break;
    held.push_back(std::move(**b));
  }
  ASSERT_EQ(held.size() % 2, 0u) << "an odd count of batches past the slots, which pairs would overshoot";
  EXPECT_EQ(loader->stats().copied_batches, held.size() - 3) << "one copy for each batch past the 3 slots";
}

TEST_F(LoaderTest, BadOptionsAreRefusedBeforeAnythingStarts) {
  LoaderOptions o = options(2, 8);
  o.image_folder.clear();
  EXPECT_EQ(Loader::open(o).status().code(), Status::Code::kInvalidArgument);
  o = options(2, 8);
  o.rank = 4;
  o.world_size = 4;
  EXPECT_NE(Loader::open(o).status().message().find("rank 4"), std::string::npos);
  o = options(0, 8);
  EXPECT_FALSE(Loader::open(o).ok());
  o = options(2, 8);
  o.log_level = "loud";
  EXPECT_NE(Loader::open(o).status().message().find("loud"), std::string::npos);
  o = options(2, 8);
  o.image_folder = dir_->path() + "/nope";
  EXPECT_EQ(Loader::open(o).status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace forkfeed
