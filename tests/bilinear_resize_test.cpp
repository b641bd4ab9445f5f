// bilinear_resize writes cv::resize(INTER_LINEAR)'s bytes: for thousands of random source
// and output sizes (shrinking by up to 5x, enlarging, one row or column), on views whose
// rows are not contiguous, and through the sizes cv::resize takes another path for.
#include "transforms/bilinear_resize.h"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

namespace forkfeed {
namespace {

// bilinear_resize(from) and cv::resize(from) to `size`: the count of bytes that differ.
int differing_bytes(const cv::Mat& from, cv::Size size) {
  cv::Mat ours(size, CV_8UC3), opencv(size, CV_8UC3);
  bilinear_resize(from, ours);
  cv::resize(from, opencv, size, 0, 0, cv::INTER_LINEAR);
  return cv::countNonZero(cv::Mat(ours != opencv).reshape(1));
}

cv::Mat noise(cv::Size size, std::mt19937& rng) {
  cv::Mat img(size, CV_8UC3);
  cv::randu(img, 0, 256);
  // Some flat and saturated runs too: the edge cases of the rounding.
  img(cv::Rect(0, 0, std::max(1, size.width / 3), std::max(1, size.height / 3)))
      .setTo(cv::Scalar(255, 0, 255));
  (void)rng;
  return img;
}

TEST(BilinearResize, EverySizeGivesOpenCvsBytes) {
  std::mt19937 rng(7);
  cv::setRNGSeed(7);
  const auto side = [&](int most) { return 1 + static_cast<int>(rng() % static_cast<unsigned>(most)); };
  for (int n = 0; n < 2500; ++n) {
    cv::Size from, to;
    switch (n % 4) {
      case 0:  // the fused path's: a window down to 224 by less than 2x
        to = {224, 224};
        from = {225 + side(222), 225 + side(222)};
        break;
      case 1:  // shrinking by up to 5x
        to = {side(160), side(160)};
        from = {to.width * (1 + side(4)) + side(9), to.height * (1 + side(4)) + side(9)};
        break;
      case 2:  // enlarging
        from = {side(120), side(120)};
        to = {from.width + side(300), from.height + side(300)};
        break;
      default:  // anything, one row or column included
        from = {side(400), side(400)};
        to = {side(400), side(400)};
    }
    const cv::Mat img = noise(from, rng);
    ASSERT_EQ(differing_bytes(img, to), 0) << from << " -> " << to;
  }
}

TEST(BilinearResize, ViewsAndOpenCvsOtherPaths) {
  std::mt19937 rng(11);
  const cv::Mat big = noise({700, 500}, rng);
  // A view: rows of another image, whose last row ends where the bigger image's does.
  EXPECT_EQ(differing_bytes(big(cv::Rect(13, 7, 401, 333)), {224, 224}), 0);
  EXPECT_EQ(differing_bytes(big(cv::Rect(299, 167, 401, 333)), {224, 224}), 0);
  EXPECT_EQ(differing_bytes(big(cv::Rect(0, 0, 1, 500)), {3, 224}), 0);
  // The same size (a copy) and an exact halving (OpenCV's area averaging).
  EXPECT_EQ(differing_bytes(big, big.size()), 0);
  EXPECT_EQ(differing_bytes(big, {350, 250}), 0);
  EXPECT_EQ(differing_bytes(big(cv::Rect(1, 1, 448, 448)), {224, 224}), 0);
}

}  // namespace
}  // namespace forkfeed
