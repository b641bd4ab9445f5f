// FusedDecode: a worker's pipeline (transforms/pipeline.h) turning decoded pixels into one
// output sample, written straight into its place in a batch slot: uint8 or float32
// normalised, NHWC or NCHW.
//
// The loader's path plans first and decodes after: plan() says which region of the
// image becomes the sample (from the header's size alone), the decoder decodes only
// that region, and write() resizes it, runs the pixel ops on the small sample and stores
// it into the slot. apply() is the reference, doing the pipeline's crops and resizes one
// after another on a fully decoded image, as torchvision does; the probe and the tests
// measure the loader's path against it.
#pragma once

#include <cstddef>
#include <opencv2/core/mat.hpp>
#include <vector>

#include "base/keyed_rng.h"
#include "base/stage_profile.h"
#include "transforms/crop.h"
#include "transforms/pipeline.h"
#include "transforms/sample_geometry.h"
#include "transport/arena_layout.h"
#include "workers/pixel_store.h"

namespace forkfeed {

class FusedDecode {
 public:
  // `spec` comes from options the loader checked: its pipeline builds.
  explicit FusedDecode(const TransformSpec& spec);

  // The window of a width x height image that becomes the sample. `rng` is the sample's
  // own stream, so the result does not depend on which worker runs it. Fails for bad
  // data: an image smaller than a crop, or a resize past max_pixels (a 1 x 20000 strip).
  // When `geometry` is not null it gets the image's size and these steps (what a mask
  // follows), and write() its moves.
  Result<SampleWindow> plan(int width, int height, KeyedRng& rng, SampleGeometry* geometry = nullptr);

  // Resizes `pixels` (those of the planned window's source, at any scale) to the window's
  // rectangle of the output — the rest is its fill —, runs the rest of the pipeline with the
  // draws that follow plan()'s, and writes the sample to `out` (sample_bytes() of them).
  // The pixel ops' flips and warps are appended to `geometry`'s moves when it is not null.
  void write(const cv::Mat& pixels, const SampleWindow& window, KeyedRng& rng, std::byte* out,
             SampleGeometry* geometry = nullptr);

  // Whether plan() and write() do what the pipeline says (Pipeline::fusable); if not,
  // apply() must.
  bool fusable() const { return pipeline_.fusable(); }
  // Whether plan() draws from the sample's boxes, which `geometry` must then hold
  // (Pipeline::needs_boxes).
  bool needs_boxes() const { return pipeline_.needs_boxes(); }
  // The size of the sample plan() (or apply()) planned last: the pipeline's one size, or
  // (Pipeline::size() 0) its own, checked against max_size.
  cv::Size output_size() const { return size_; }

  // Times the resize into the sample, each op and the store into `profile` from now on
  // (Pipeline::profile_into); null: no more.
  void profile_into(StageProfile* profile);

  // The reference: the whole pipeline on the whole decoded image; `geometry` as plan()
  // and write() fill it.
  Status apply(const cv::Mat& rgb, KeyedRng& rng, std::byte* out, SampleGeometry* geometry = nullptr);

 private:
  // Resizes `from` to `to`'s size: area averaging when shrinking by 2x or more on both
  // sides (close to torchvision's antialiased resize), bilinear otherwise, where every
  // source pixel still weighs in (OpenCV's INTER_LINEAR, by transforms/bilinear_resize.h). OpenCV's area
  // averaging at a fractional factor costs more than the JPEG decode itself; the fused path's DCT scaling
  // leaves the final resize under 2x, so it is bilinear there.
  static void resize(const cv::Mat& from, cv::Mat& to);
  // `pixels` resized into `window`'s rectangle of `to`, the rest of `to` its fill.
  static void place(const cv::Mat& pixels, const SampleWindow& window, cv::Mat& to);
  // The steps of a width x height image's draws, into `geometry` (its size set, its moves
  // cleared) when there is one, else into steps_.
  Status draw_steps(int width, int height, KeyedRng& rng, SampleGeometry* geometry);
  const std::vector<GeometryStep>& steps_of(const SampleGeometry* geometry) const {
    return geometry != nullptr ? geometry->steps : steps_;
  }
  // The pixel ops on square_, the store into `out`, the tensor ops there.
  void finish(KeyedRng& rng, std::byte* out, fn::Moves* moves);
  // place() and store_.write(), timed when profiled.
  void place_timed(const cv::Mat& pixels, const SampleWindow& window, cv::Mat& to);
  void store_timed(const cv::Mat& sample, bool mirror, std::byte* out);

  Pipeline pipeline_;
  Layout layout_;
  // uint8 NHWC and no pixel op but flips: an unmirrored sample is resized straight into
  // the slot, with no copy.
  bool makes_in_slot_;
  PixelStore store_;                 // every other sample: made in square_, then written by store_
  cv::Mat square_;                   // reused across samples: the resized sample, in cache
  cv::Mat scaled_[2];                // reused across samples: the reference's resized images
  std::vector<GeometryStep> steps_;  // reused across samples that record no geometry
  cv::Size size_;                    // of the sample planned last
  StageProfile* profile_ = nullptr;
  std::size_t resize_stage_ = 0, store_stage_ = 0;  // profile_'s
};

}  // namespace forkfeed
