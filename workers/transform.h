// Transform: turns a decoded RGB image into one output sample, written straight into
// its place in a batch slot (uint8 NHWC, or float32 NCHW normalised).
#pragma once

#include <cstddef>
#include <opencv2/core/mat.hpp>

#include "transport/arena_layout.h"
#include "workers/keyed_rng.h"

namespace forkfeed {

// Bytes of one output sample.
std::size_t sample_bytes(DType dtype, std::uint32_t size);

class Transform {
 public:
  explicit Transform(const TransformSpec& spec) : spec_(spec) {}

  // Writes the sample for `rgb` to `out` (sample_bytes() of them). `rng` is the sample's
  // own stream, so the result does not depend on which worker runs it.
  // Fails only for an image whose eval resize would exceed max_pixels (a 1 x 20000 strip).
  Status apply(const cv::Mat& rgb, KeyedRng& rng, std::byte* out);

 private:
  // Resizes `from` to size x size into `to`: area averaging when shrinking (close to
  // torchvision's antialiased resize), bilinear when enlarging.
  void resize(const cv::Mat& from, cv::Mat& to) const;
  void store_float(const cv::Mat& square, std::byte* out) const;

  TransformSpec spec_;
  cv::Mat resized_;  // reused across samples: eval's resized image
  cv::Mat square_;   // reused across samples: the uint8 sample before float conversion
};

}  // namespace forkfeed
