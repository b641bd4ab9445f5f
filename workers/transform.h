// Transform: turns decoded pixels into one output sample, written straight into its
// place in a batch slot: uint8 or float32 normalised, NHWC or NCHW.
//
// The loader's path plans first and decodes after: plan() says which region of the
// image becomes the sample (from the header's size alone), the decoder decodes only
// that region, and write() resizes it into the slot. apply() is the reference, in
// torchvision's order on a fully decoded image; the probe and the tests measure the
// loader's path against it.
#pragma once

#include <cstddef>
#include <opencv2/core/mat.hpp>

#include "transport/arena_layout.h"
#include "workers/crop.h"
#include "workers/keyed_rng.h"

namespace forkfeed {

// Bytes of one output sample.
std::size_t sample_bytes(DType dtype, std::uint32_t size);

class Transform {
 public:
  explicit Transform(const TransformSpec& spec);

  // The window of a width x height image that becomes the sample. `rng` is the sample's
  // own stream, so the result does not depend on which worker runs it. Fails only for
  // an image whose eval resize would exceed max_pixels (a 1 x 20000 strip).
  Result<SampleWindow> plan(int width, int height, KeyedRng& rng) const;

  // Resizes `window` (the pixels of a planned source region, at any scale) to the
  // output size, mirrors it if `flip`, and writes the sample to `out`
  // (sample_bytes() of them).
  void write(const cv::Mat& window, bool flip, std::byte* out);

  // The reference: the transform in torchvision's order on the whole decoded image
  // (eval resizes all of it, then crops the center).
  Status apply(const cv::Mat& rgb, KeyedRng& rng, std::byte* out);

 private:
  // Resizes `from` to `to`'s size: area averaging when shrinking by 2x or more on both
  // sides (close to torchvision's antialiased resize), bilinear otherwise, where every
  // source pixel still weighs in. OpenCV's area averaging at a fractional factor
  // costs more than the JPEG decode itself; the fused path's DCT scaling leaves the
  // final resize under 2x, so it is bilinear there.
  static void resize(const cv::Mat& from, cv::Mat& to);
  // Where the uint8 NHWC sample is made: the slot itself when that is the output, else
  // square_, which store() then writes to the slot.
  cv::Mat square_for(std::byte* out);
  // Writes `square` (uint8 NHWC) to `out` in the output's dtype and layout: planes split
  // out for NCHW, float32 normalised as x * scale + shift, in vectorised loops. Nothing
  // to do when `square` is the slot.
  void store(const cv::Mat& square, std::byte* out);

  static constexpr int kPattern = 12;  // 4 RGB pixels: the period of the per-channel constants
  TransformSpec spec_;
  Layout layout_;  // resolved
  float scale_[kPattern] = {};  // 1 / (255 std[c]) for value k, c = k % 3
  float shift_[kPattern] = {};  // -mean[c] / std[c]
  cv::Mat planes_[3];  // reused across samples: NCHW planes (the slot's, for uint8)
  cv::Mat resized_;  // reused across samples: the reference eval's resized image
  cv::Mat square_;   // reused across samples: the uint8 NHWC sample when the slot is not
};

}  // namespace forkfeed
