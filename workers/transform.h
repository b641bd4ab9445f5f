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

#include "base/keyed_rng.h"
#include "transport/arena_layout.h"
#include "transforms/crop.h"
#include "workers/pixel_store.h"

namespace forkfeed {

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
  TransformSpec spec_;
  // uint8 NHWC: an unflipped sample is resized straight into the slot, with no copy.
  bool makes_in_slot_;
  PixelStore store_;  // every other sample: resized into square_, then written by store_
  cv::Mat resized_;   // reused across samples: the reference eval's resized image
  cv::Mat square_;    // reused across samples: the resized sample, in cache
};

}  // namespace forkfeed
