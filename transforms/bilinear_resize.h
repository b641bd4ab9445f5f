// bilinear_resize: cv::resize(from, to, to.size(), 0, 0, cv::INTER_LINEAR) for RGB uint8
// (CV_8UC3, views too), the same bytes, in about half the time where the CPU has AVX2:
// OpenCV's 11-bit weights and its two passes — each source row once into exact int32 sums
// of its two columns, then rows blended with OpenCV's vector rounding — with the row pass
// a byte shuffle and a multiply-add per eight values. Anything else (other types, the
// same size, OpenCV's exact-halving path, no AVX2) goes to cv::resize itself;
// tests/bilinear_resize_test.cpp holds the bytes to cv::resize over thousands of sizes.
#pragma once

#include <opencv2/core/mat.hpp>

namespace forkfeed {

// `to` must have its size and type (CV_8UC3, as `from`) already.
void bilinear_resize(const cv::Mat& from, cv::Mat& to);

}  // namespace forkfeed
