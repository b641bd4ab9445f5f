// fn::adjust_hue, adjust_saturation and adjust_contrast eight pixels at once (AVX2, where
// the CPU has it) write the bytes of their pixel-by-pixel loops (the _scalar twins) for
// every one of the 2^24 colours and factors across their range — the same float32
// operations in the same order — and on views whose rows are not a multiple of eight
// pixels.
#include <gtest/gtest.h>

#include <cstdint>
#include <opencv2/core.hpp>
#include <tuple>

#include "transforms/functional.h"

namespace forkfeed {
namespace {

// 4096 x 4096 pixels, each colour once.
cv::Mat every_colour() {
  cv::Mat img(4096, 4096, CV_8UC3);
  for (int y = 0; y < img.rows; ++y) {
    auto* row = img.ptr<std::uint8_t>(y);
    for (int x = 0; x < img.cols; ++x) {
      const std::uint32_t i = static_cast<std::uint32_t>(y) * 4096 + static_cast<std::uint32_t>(x);
      row[3 * x] = static_cast<std::uint8_t>(i >> 16);
      row[3 * x + 1] = static_cast<std::uint8_t>(i >> 8);
      row[3 * x + 2] = static_cast<std::uint8_t>(i);
    }
  }
  return img;
}

using Adjust = void (*)(cv::Mat&, double);

// `vector` and `scalar` write the same bytes on `img` at `factor`; and change some.
void expect_same_bytes(const cv::Mat& img, Adjust vector, Adjust scalar, double factor) {
  cv::Mat by_vector = img.clone(), by_scalar = img.clone();
  vector(by_vector, factor);
  scalar(by_scalar, factor);
  cv::Mat diff;
  cv::absdiff(by_vector, by_scalar, diff);
  EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0) << "factor " << factor;
  if (factor != 1.0) {
    EXPECT_GT(cv::countNonZero(cv::Mat(img != by_vector).reshape(1)), 0) << factor;
  }
}

TEST(AdjustSaturation, EveryColourGetsTheBytesOfThePixelByPixelLoop) {
  const cv::Mat colours = every_colour();
  // ColorJitter(saturation=0.4) draws from [0.6, 1.4]; RandomAdjustSharpness-like
  // extremes and 0 (grey) too.
  for (const double factor : {0.0, 0.6, 0.83, 1.0, 1.17, 1.4, 2.9}) {
    expect_same_bytes(colours, fn::adjust_saturation, fn::adjust_saturation_scalar, factor);
  }
}

TEST(AdjustContrast, TheMeanGreyOfEveryColourIsThePixelByPixelLoops) {
  // The whole image's mean grey, and parts of it (views, rows not a multiple of eight).
  const cv::Mat colours = every_colour();
  for (const double factor : {0.0, 0.6, 1.4, 2.9}) {
    expect_same_bytes(colours, fn::adjust_contrast, fn::adjust_contrast_scalar, factor);
  }
  for (const int width : {1, 7, 9, 301}) {
    for (const double factor : {0.6, 1.4}) {
      expect_same_bytes(colours(cv::Rect(3, 17, width, 41)), fn::adjust_contrast, fn::adjust_contrast_scalar,
                        factor);
    }
  }
}

TEST(LevelTables, EveryLevelOfEveryViewLooksUpItsOwnEntry) {
  // The ops that are one table of levels (AVX-512 VBMI's byte permutes where the CPU has
  // them): invert, posterize, solarize, on rows of every length around the 64 bytes taken
  // at once, and the bytes beside a view untouched.
  const cv::Mat colours = every_colour();
  for (const int width : {1, 5, 21, 22, 43, 64, 301}) {
    const cv::Rect part(7, 3, width, 29);
    cv::Mat inverted = colours.clone(), posterized = colours.clone(), solarized = colours.clone();
    cv::Mat view = inverted(part);
    fn::invert(view);
    view = posterized(part);
    fn::posterize(view, 3);
    view = solarized(part);
    fn::solarize(view, 128.5);
    cv::Mat expected_inverted = colours.clone(), expected_posterized = colours.clone(),
            expected_solarized = colours.clone();
    for (int y = part.y; y < part.y + part.height; ++y) {
      for (int x = 3 * part.x; x < 3 * (part.x + part.width); ++x) {
        const std::uint8_t v = colours.ptr<std::uint8_t>(y)[x];
        expected_inverted.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(255 - v);
        expected_posterized.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(v & 0xE0);
        expected_solarized.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(v >= 129 ? 255 - v : v);
      }
    }
    EXPECT_EQ(cv::countNonZero(cv::Mat(inverted != expected_inverted).reshape(1)), 0) << "width " << width;
    EXPECT_EQ(cv::countNonZero(cv::Mat(posterized != expected_posterized).reshape(1)), 0)
        << "width " << width;
    EXPECT_EQ(cv::countNonZero(cv::Mat(solarized != expected_solarized).reshape(1)), 0) << "width " << width;
  }
}

TEST(AdjustHue, EveryColourGetsTheBytesOfThePixelByPixelLoop) {
  const cv::Mat colours = every_colour();
  for (const double factor : {-0.5, -0.17, 0.0, 0.05, 0.31, 0.5}) {
    cv::Mat vector = colours.clone(), scalar = colours.clone();
    fn::adjust_hue(vector, factor);
    fn::adjust_hue_scalar(scalar, factor);
    cv::Mat diff;
    cv::absdiff(vector, scalar, diff);
    EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0) << "hue factor " << factor;
    if (factor != 0.0) {
      EXPECT_GT(cv::countNonZero(cv::Mat(colours != vector).reshape(1)), 0) << factor;
    }
  }
}

TEST(ColourKernels, ViewsOfRowsNotAMultipleOfEightPixels) {
  const cv::Mat colours = every_colour();
  for (const int width : {1, 7, 9, 301}) {
    const cv::Rect part(5, 11, width, 37);
    for (const auto& [vector, scalar, factor] :
         {std::tuple{Adjust{fn::adjust_hue}, Adjust{fn::adjust_hue_scalar}, 0.23},
          std::tuple{Adjust{fn::adjust_saturation}, Adjust{fn::adjust_saturation_scalar}, 1.3}}) {
      cv::Mat by_vector = colours.clone(), by_scalar = colours.clone();
      cv::Mat view = by_vector(part), same = by_scalar(part);
      vector(view, factor);
      scalar(same, factor);
      // Only the view changes, the same in both.
      cv::Mat diff;
      cv::absdiff(by_vector, by_scalar, diff);
      EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0) << "width " << width << ", factor " << factor;
      cv::Mat outside = by_vector.clone();
      colours(part).copyTo(outside(part));
      EXPECT_EQ(cv::countNonZero(cv::Mat(outside != colours).reshape(1)), 0) << "width " << width;
    }
  }
}

}  // namespace
}  // namespace forkfeed
