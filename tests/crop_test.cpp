// Crop geometry: torchvision's RandomResizedCrop bounds and fallback, eval resize+crop.
#include "transforms/crop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace forkfeed {
namespace {

TEST(RandomResizedCrop, StaysInsideWithinScaleAndRatio) {
  int flips = 0;
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
    flips += b.flip;
  }
  EXPECT_NEAR(flips, 1000, 120) << "flip with p = 0.5";
}

TEST(RandomResizedCrop, SameKeySameCrop) {
  KeyedRng a({7, 1, 99}), b({7, 1, 99}), c({7, 2, 99});
  const CropBox x = random_resized_crop(640, 480, a), y = random_resized_crop(640, 480, b);
  EXPECT_EQ(x.x, y.x);
  EXPECT_EQ(x.y, y.y);
  EXPECT_EQ(x.width, y.width);
  EXPECT_EQ(x.height, y.height);
  EXPECT_EQ(x.flip, y.flip);
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

TEST(CenterCropPlan, MatchesTorchvisionResizeThenCenterCrop) {
  // Resize(256) on 500x375 -> 341x256 (long side truncated); CenterCrop(224):
  // left = round((341 - 224) / 2) = round(58.5) = 58 (half to even), top = 16.
  const EvalPlan p = center_crop_plan(500, 375, 224);
  EXPECT_EQ(p.resized_width, 341);
  EXPECT_EQ(p.resized_height, 256);
  EXPECT_EQ(p.crop.x, 58);
  EXPECT_EQ(p.crop.y, 16);
  EXPECT_EQ(p.crop.width, 224);
  const EvalPlan q = center_crop_plan(300, 600, 224);
  EXPECT_EQ(q.resized_width, 256);
  EXPECT_EQ(q.resized_height, 512);
  EXPECT_EQ(q.crop.x, 16);
  EXPECT_EQ(q.crop.y, 144);
  EXPECT_EQ(eval_resize_for(224), 256);
}

// The window a sample is decoded from is the crop box exactly (train), and never
// reaches outside the image, for images smaller than the output too.
TEST(SampleWindow, TrainWindowIsTheCropBox) {
  for (std::uint64_t i = 0; i < 500; ++i) {
    KeyedRng a({3, 1, i}), b({3, 1, i});
    const int w = 1 + static_cast<int>(i * 37 % 900), h = 1 + static_cast<int>(i * 53 % 700);
    const CropBox box = random_resized_crop(w, h, a);
    const SampleWindow window = train_window(w, h, b);
    EXPECT_EQ(window.source.x, box.x);
    EXPECT_EQ(window.source.y, box.y);
    EXPECT_EQ(window.source.width, box.width);
    EXPECT_EQ(window.source.height, box.height);
    EXPECT_EQ(window.flip, box.flip);
  }
}

TEST(SampleWindow, EvalWindowStaysInsideTheImage) {
  const std::vector<std::pair<int, int>> sizes = {{1, 1},     {5, 3},    {31, 200}, {224, 224}, {255, 256},
                                                  {500, 375}, {375, 500}, {4000, 3}, {3, 4000},  {1601, 1203}};
  for (const int size : {32, 224, 512}) {
    for (const auto& [w, h] : sizes) {
      const SampleWindow window = eval_window(center_crop_plan(w, h, size), w, h);
      const Region& r = window.source;
      EXPECT_GE(r.x, 0) << w << "x" << h << " to " << size;
      EXPECT_GE(r.y, 0) << w << "x" << h << " to " << size;
      EXPECT_GT(r.width, 0);
      EXPECT_GT(r.height, 0);
      EXPECT_LE(r.x + r.width, w + 1e-9) << w << "x" << h << " to " << size;
      EXPECT_LE(r.y + r.height, h + 1e-9) << w << "x" << h << " to " << size;
      EXPECT_FALSE(window.flip);
    }
  }
  // 500x375 at 224: the center 224 of 341x256 is x 58..282 of 341, so 85..413 of 500.
  const Region r = eval_window(center_crop_plan(500, 375, 224), 500, 375).source;
  EXPECT_NEAR(r.x, 58 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(r.width, 224 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(r.y, 16 * 375.0 / 256, 1e-9);
}

}  // namespace
}  // namespace forkfeed
