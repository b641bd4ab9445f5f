// SampleGeometry: where an image's pixels went — the decoded image's size, its geometry
// ops' crops and resizes, its pixel ops' flips and warps — recorded while the image is
// made from the sample's draws, so that the sample's masks follow it exactly: one set of
// draws, every field (workers/sample_fields.h).
#pragma once

#include <vector>

#include <opencv2/core/mat.hpp>
#include "transforms/functional.h"
#include "transforms/ops.h"

namespace forkfeed {

struct SampleGeometry {
  int width = 0, height = 0;        // the decoded image's
  std::vector<GeometryStep> steps;  // Pipeline::steps, in order
  fn::Moves moves;                  // the pixel ops', in order
};

// Makes `out` (uint8 or uint16, 1 channel) from `mask`, which has the image's size: the
// steps' crops, and their resizes nearest as torch's interpolate picks pixels (no
// antialias: class ids stay class ids), then the moves, nearest, with `fill` wherever
// pixels come from outside the mask — torchvision's functional ops on a mask tensor with
// InterpolationMode.NEAREST, pixel for pixel. REQUIRES: mask is width x height, and
// `out` is the last step's size (or the image's, without steps), allocated.
void follow(const SampleGeometry& g, const cv::Mat& mask, double fill, cv::Mat& out);

// The last row of the mask that follow() reads: a decoder may stop there.
int last_source_row(const SampleGeometry& g);

// The source pixel of output pixel `i` of torch's nearest resize of `in` pixels to `out`:
// min(floor(i * float(in / out)), in - 1), in float32 as upsample_nearest computes it.
int nearest_source(int i, int in, int out);

}  // namespace forkfeed
