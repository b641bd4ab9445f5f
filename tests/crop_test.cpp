// Crop geometry: torchvision's RandomResizedCrop bounds, statistics and fallback, Resize's
// and CenterCrop's arithmetic, and the windows the train and eval pipelines plan from them
// (with train's flip, which the pipeline draws after the crop).
#include "transforms/crop.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <opencv2/core/mat.hpp>
#include <string_view>
#include <vector>

#include "transforms/pipeline.h"

namespace forkfeed {
namespace {

TEST(RandomResizedCrop, StaysInsideWithinScaleAndRatio) {
  for (std::uint64_t i = 0; i < 2000; ++i) {
    KeyedRng rng({1, 2, i});
    const int w = 100 + static_cast<int>(i % 400), h = 80 + static_cast<int>((i * 7) % 500);
    const CropBox b = random_resized_crop(w, h, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_GT(b.width, 0);
    ASSERT_GT(b.height, 0);
    ASSERT_LE(b.x + b.width, w);
    ASSERT_LE(b.y + b.height, h);
    const double area = static_cast<double>(b.width) * b.height / (static_cast<double>(w) * h);
    EXPECT_LE(area, 1.0 + 1e-9);
    // Each side is a rounded sqrt(area * ratio) or sqrt(area / ratio): half a pixel from
    // the drawn one, whose area fraction is in [0.08, 1] and ratio in [3/4, 4/3].
    EXPECT_GE((b.width + 0.5) * (b.height + 0.5), 0.08 * w * h) << w << "x" << h << " key " << i;
    EXPECT_LE((b.width - 0.5) / (b.height + 0.5), 4.0 / 3.0) << w << "x" << h << " key " << i;
    EXPECT_GE((b.width + 0.5) / (b.height - 0.5), 3.0 / 4.0) << w << "x" << h << " key " << i;
  }
}

// The draws' distribution: the area fraction uniform in [0.08, 1] and the log ratio
// uniform in [log 3/4, log 4/3], kept when the box fits. On a 500x500 image the kept
// boxes have a mean area fraction of 0.478 (sd 0.234) and a mean log ratio of 0 (sd
// 0.159), by simulation of the same algorithm: 2000 keys put the means within 5 standard
// errors of these.
TEST(RandomResizedCrop, AreaAndRatioAreDrawnAsTorchvisionDraws) {
  double area_sum = 0, log_ratio_sum = 0;
  constexpr int kKeys = 2000;
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    KeyedRng rng({4, 0, i});
    const CropBox b = random_resized_crop(500, 500, rng);
    area_sum += static_cast<double>(b.width) * b.height / (500.0 * 500.0);
    log_ratio_sum += std::log(static_cast<double>(b.width) / b.height);
  }
  EXPECT_NEAR(area_sum / kKeys, 0.478, 0.026);
  EXPECT_NEAR(log_ratio_sum / kKeys, 0.0, 0.018);
}

TEST(RandomResizedCrop, TakesScaleAndRatio) {
  // A fixed scale and ratio leave only the position to draw: a quarter of 400x300 as a
  // square is round(sqrt(30000)) = 173 on a side.
  for (std::uint64_t i = 0; i < 100; ++i) {
    KeyedRng rng({5, 0, i});
    const CropBox b = random_resized_crop(400, 300, rng, {0.25, 0.25}, {1.0, 1.0});
    EXPECT_EQ(b.width, 173);
    EXPECT_EQ(b.height, 173);
    EXPECT_LE(b.x + b.width, 400);
    EXPECT_LE(b.y + b.height, 300);
  }
}

TEST(RandomResizedCrop, SameKeySameCrop) {
  KeyedRng a({7, 1, 99}), b({7, 1, 99}), c({7, 2, 99});
  const CropBox x = random_resized_crop(640, 480, a), y = random_resized_crop(640, 480, b);
  EXPECT_EQ(x.x, y.x);
  EXPECT_EQ(x.y, y.y);
  EXPECT_EQ(x.width, y.width);
  EXPECT_EQ(x.height, y.height);
  const CropBox z = random_resized_crop(640, 480, c);
  EXPECT_FALSE(x.x == z.x && x.y == z.y && x.width == z.width && x.height == z.height)
      << "a different epoch gives a different crop";
}

TEST(RandomResizedCrop, FallsBackToCentralCropOnExtremeAspect) {
  // A 1000x10 strip: no crop with ratio in [3/4, 4/3] and area >= 8% fits, so torchvision
  // falls back to the centre at ratio 4/3: h = 10, w = round(10 * 4 / 3) = 13.
  KeyedRng rng({0});
  const CropBox b = random_resized_crop(1000, 10, rng);
  EXPECT_EQ(b.width, 13);
  EXPECT_EQ(b.height, 10);
  EXPECT_EQ(b.x, (1000 - 13) / 2);
  EXPECT_EQ(b.y, 0);
}

TEST(ResizeAndCenterCrop, MatchTorchvisionResizeThenCenterCrop) {
  // Resize(256) on 500x375 -> 341x256 (long side truncated); CenterCrop(224):
  // left = round((341 - 224) / 2) = round(58.5) = 58 (half to even), top = 16.
  EXPECT_EQ(eval_resize_for(224), 256);
  EXPECT_EQ(resized_size(500, 375, 256), (std::array<int, 2>{341, 256}));
  EXPECT_EQ(center_crop_offset(341, 224), 58);
  EXPECT_EQ(center_crop_offset(256, 224), 16);
  EXPECT_EQ(resized_size(300, 600, 256), (std::array<int, 2>{256, 512}));
  EXPECT_EQ(center_crop_offset(256, 224), 16);
  EXPECT_EQ(center_crop_offset(512, 224), 144);
  // A 1 x 10^7 strip's long side saturates instead of overflowing.
  EXPECT_EQ(resized_size(1, 10'000'000, 256)[1], std::numeric_limits<std::int32_t>::max());
}

PipelineOptions pipeline_options(std::uint32_t size) {
  const LoaderOptions o;
  // No resize is refused for its size here: the windows of strips are what is checked.
  return {size, DType::kUint8, o.mean, o.std, std::numeric_limits<std::uint64_t>::max()};
}

Result<Pipeline> build(std::string_view text, std::uint32_t size) {
  return Pipeline::build(text, pipeline_options(size));
}

// The window a train sample is decoded from is the RandomResizedCrop box exactly, and
// never reaches outside the image, for images smaller than the output too.
TEST(SampleWindow, TrainWindowIsTheCropBox) {
  auto train = build("train", 224);
  ASSERT_TRUE(train.ok()) << train.status().message();
  EXPECT_EQ(train->size(), 224u);
  for (std::uint64_t i = 0; i < 500; ++i) {
    KeyedRng a({3, 1, i}), b({3, 1, i});
    const int w = 1 + static_cast<int>(i * 37 % 900), h = 1 + static_cast<int>(i * 53 % 700);
    const CropBox box = random_resized_crop(w, h, a);
    auto window = train->plan(w, h, b);
    ASSERT_TRUE(window.ok()) << w << "x" << h << ": " << window.status().message();
    EXPECT_EQ(window->source.x, box.x);
    EXPECT_EQ(window->source.y, box.y);
    EXPECT_EQ(window->source.width, box.width);
    EXPECT_EQ(window->source.height, box.height);
  }
}

TEST(SampleWindow, EvalWindowStaysInsideTheImage) {
  const std::vector<std::pair<int, int>> sizes = {{1, 1},     {5, 3},      {31, 200},  {224, 224},
                                                  {255, 256}, {500, 375},  {375, 500}, {4000, 3},
                                                  {3, 4000},  {1601, 1203}};
  for (const std::uint32_t size : {32u, 224u, 512u}) {
    auto eval = build("eval", size);
    ASSERT_TRUE(eval.ok()) << eval.status().message();
    EXPECT_EQ(eval->size(), size);
    for (const auto& [w, h] : sizes) {
      KeyedRng rng({0, 0, 0});
      auto window = eval->plan(w, h, rng);
      ASSERT_TRUE(window.ok()) << w << "x" << h << " to " << size << ": " << window.status().message();
      const Region& r = window->source;
      EXPECT_GE(r.x, 0) << w << "x" << h << " to " << size;
      EXPECT_GE(r.y, 0) << w << "x" << h << " to " << size;
      EXPECT_GT(r.width, 0);
      EXPECT_GT(r.height, 0);
      EXPECT_LE(r.x + r.width, w + 1e-9) << w << "x" << h << " to " << size;
      EXPECT_LE(r.y + r.height, h + 1e-9) << w << "x" << h << " to " << size;
    }
  }
  // 500x375 at 224: the center 224 of 341x256 is x 58..282 of 341, so 85..413 of 500.
  auto eval = build("eval", 224);
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  KeyedRng rng({0, 0, 0});
  auto window = eval->plan(500, 375, rng);
  ASSERT_TRUE(window.ok()) << window.status().message();
  const Region& r = window->source;
  EXPECT_NEAR(r.x, 58 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(r.width, 224 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(r.y, 16 * 375.0 / 256, 1e-9);
  EXPECT_NEAR(r.height, 224 * 375.0 / 256, 1e-9);
}

// Size 0 is the shorthand's own: 224.
TEST(SampleWindow, ShorthandsMake224ByDefault) {
  for (const char* text : {"train", "eval"}) {
    auto p = build(text, 0);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().message();
    EXPECT_EQ(p->size(), 224u) << text;
  }
}

// train's RandomHorizontalFlip (p = 0.5) is drawn after the crop, from the same stream:
// run_pixels() says whether the sample is to be mirrored. eval never mirrors.
TEST(SampleWindow, TrainFlipsHalfTheSamplesByKey) {
  auto train = build("train", 32), again = build("train", 32), eval = build("eval", 32);
  ASSERT_TRUE(train.ok()) << train.status().message();
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  cv::Mat sample(32, 32, CV_8UC3, cv::Scalar(1, 2, 3));
  int flips = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    const int w = 100 + static_cast<int>(i % 400), h = 80 + static_cast<int>((i * 7) % 500);
    KeyedRng a({1, 2, i}), b({1, 2, i}), c({1, 2, i});
    ASSERT_TRUE(train->plan(w, h, a).ok());
    const bool flip = train->run_pixels(sample, a);
    flips += flip ? 1 : 0;
    ASSERT_TRUE(again->plan(w, h, b).ok());
    EXPECT_EQ(again->run_pixels(sample, b), flip) << "the same key, the same flip: key " << i;
    ASSERT_TRUE(eval->plan(w, h, c).ok());
    EXPECT_FALSE(eval->run_pixels(sample, c)) << "key " << i;
  }
  EXPECT_NEAR(flips, 1000, 120) << "flip with p = 0.5";
  // Only flips: the sample's pixels are left to the store.
  EXPECT_TRUE(train->pixel_ops_are_mirrors());
  EXPECT_EQ(sample.at<cv::Vec3b>(5, 7), cv::Vec3b(1, 2, 3));
}

}  // namespace
}  // namespace forkfeed
