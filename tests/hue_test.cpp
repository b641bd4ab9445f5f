// fn::adjust_hue eight pixels at once (AVX2, where the CPU has it) writes the bytes of the
// pixel-by-pixel loop, adjust_hue_scalar, for every one of the 2^24 colours and hue factors
// across their range — the same float32 operations in the same order — and on views whose
// rows are not a multiple of eight pixels.
#include <gtest/gtest.h>

#include <cstdint>
#include <opencv2/core.hpp>

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

TEST(AdjustHue, ViewsOfRowsNotAMultipleOfEightPixels) {
  const cv::Mat colours = every_colour();
  for (const int width : {1, 7, 9, 301}) {
    const cv::Rect part(5, 11, width, 37);
    cv::Mat vector = colours.clone(), scalar = colours.clone();
    cv::Mat view = vector(part), same = scalar(part);
    fn::adjust_hue(view, 0.23);
    fn::adjust_hue_scalar(same, 0.23);
    cv::Mat diff;
    cv::absdiff(vector, scalar, diff);
    EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0) << "width " << width;
  }
}

}  // namespace
}  // namespace forkfeed
