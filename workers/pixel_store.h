// PixelStore: writes a resized sample (uint8 RGB, interleaved, in cache) into its
// place in a batch slot, in the output's dtype and layout, mirrored left-right when the
// train transform flips it: one pass over the sample, vectorised.
//
// float32 is (x / 255 - mean[c]) / std[c], computed as x * scale[c] + shift[c]. NCHW
// writes one plane per channel. A mirrored row is converted into a row of scratch (in
// L1) and copied out reversed, which costs a few microseconds where OpenCV's in-place
// flip of a 224 x 224 RGB image costs ~22 us.
//
// The kernels are plain loops that GCC vectorises at -O3 (Release). On x86-64 each is
// compiled for the baseline (SSE2), x86-64-v2 (SSE4.2), v3 (AVX2 + FMA) and v4 (AVX-512),
// and the widest the CPU runs is chosen when the library is loaded. Writing a float32
// 224 x 224 sample (602 KB) into a slot takes ~30 us with AVX-512: about what memset
// takes to write as many bytes to memory on the machines we measured.
#pragma once

#include <cstddef>
#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <vector>

#include "forkfeed/options.h"

namespace forkfeed {

// x * scale[c] + shift[c] == (x / 255 - mean[c]) / std[c].
struct Normalisation {
  float scale[3];
  float shift[3];

  static Normalisation of(const float (&mean)[3], const float (&std)[3]);
};

class PixelStore {
 public:
  // `layout`: kNhwc or kNchw (resolved). `normalisation` applies to float32 only.
  PixelStore(DType dtype, Layout layout, const Normalisation& normalisation);

  // Writes `sample` (CV_8UC3, any row step) to `out` (rows x cols, contiguous), which it
  // does not overlap, mirrored left-right if `mirror`.
  void write(const cv::Mat& sample, bool mirror, std::byte* out);

 private:
  DType dtype_;
  Layout layout_;
  Normalisation normalisation_;
  std::vector<float> scratch_;  // one mirrored row, as three planes of floats (or bytes)
};

}  // namespace forkfeed
