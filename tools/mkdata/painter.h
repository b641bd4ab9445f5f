// Paints the pixels of one photo-like synthetic image: smooth gradients, blended shapes,
// a plane wave, grain and sensor noise, then a light lens blur.
#pragma once

#include <opencv2/core.hpp>

namespace forkfeed::mkdata {

// Returns a `size` picture in 8-bit BGR. The pixels, and the draws taken from `rng`, are
// a pure function of rng's state and `size`.
cv::Mat3b paint_image(cv::RNG& rng, cv::Size size);

}  // namespace forkfeed::mkdata
