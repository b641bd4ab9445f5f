// SampleGeometry: where an image's pixels went — the decoded image's size, its geometry
// ops' crops and resizes, its pixel ops' flips and warps — recorded while the image is
// made from the sample's draws, so that the sample's masks and boxes follow it exactly: one
// set of draws, every field (workers/sample_fields.h).
#pragma once

#include <array>
#include <span>
#include <vector>

#include <opencv2/core/mat.hpp>
#include "forkfeed/fields.h"
#include "transforms/functional.h"
#include "transforms/ops.h"

namespace forkfeed {

struct SampleGeometry {
  int width = 0, height = 0;        // the decoded image's
  std::vector<GeometryStep> steps;  // Pipeline::steps, in order
  fn::Moves moves;                  // the pixel ops', in order
  // The sample's boxes as its member writes them, for the ops that draw from them
  // (RandomIoUCrop: Pipeline::needs_boxes), set before the image is planned.
  std::vector<Box> boxes{};
  BoxFormat box_format = BoxFormat::kXyxy;
  bool box_normalized = false;
};

// Makes `out` (uint8 or uint16, 1 channel) from `mask`, which has the image's size: the
// steps' crops (`fill` in their padding), and their resizes nearest as torch's interpolate
// picks pixels (no antialias: class ids stay class ids), then the moves, nearest, with
// `fill` wherever pixels come from outside the mask — torchvision's functional ops (F.pad,
// F.crop, F.resize, ...) on a mask tensor with InterpolationMode.NEAREST, pixel for pixel.
// REQUIRES: mask is width x height, and `out` is the last step's size (or the image's,
// without steps), allocated.
void follow(const SampleGeometry& g, const cv::Mat& mask, double fill, cv::Mat& out);

// `b` as `format` writes it (in fractions of `size`, the decoded image's, when
// `normalized`), as XYXY pixels, in float32 as torchvision's box_convert computes it.
Box to_xyxy(Box b, BoxFormat format, bool normalized, cv::Size size);

// The size of the image the record ends in: its last step's output, or the decoded
// image's without steps (moves keep the size).
cv::Size output_size(const SampleGeometry& g);

// What one step does to boxes (in its input's pixels), as follow_boxes() says below: those
// whose centre a RandomIoUCrop leaves outside dropped (NaN), the crop's offset subtracted,
// clamped, resized by float32 ratios, clamped.
void follow_step(const GeometryStep& step, std::span<Box> boxes);

// Moves `boxes`, given in the decoded image's pixels, where the record moved the image's,
// as torchvision.transforms.v2 moves BoundingBoxes, in float32: each crop subtracts its
// offset and each resize multiplies by float32(out / in) — then the moves: a flip mirrors
// (x' = W - x, the ends swapped), a warp maps the four corners with F.affine's forward
// matrix (fn::affine_matrix) and takes their envelope. After every one, each coordinate is
// clamped to the image as it then is (v2 leaves a resize unclamped; a clamp there keeps
// what rounding would push a hair past the edge, which v2's sanitising would drop). A box
// without area after the steps (x2 <= x1 or y2 <= y1: cropped away, or so read) becomes
// NaN before the moves, and so does, before each warp, one that sanitising would drop
// there (keeps_box: under a pixel across): v2 would give it the area of the warp's
// envelope, a box where no object is (as if v2.SanitizeBoundingBoxes ran before each
// warp). A box through warps one after another is the envelope of envelopes, as in v2:
// it holds every pixel of its object the image still shows, and can be looser than the
// object by what each warp's envelope adds (a few pixels at 128 px for two of RandAugment's
// 30-degree ops). NaN stays NaN.
void follow_boxes(const SampleGeometry& g, std::span<Box> boxes);

// Whether v2.SanitizeBoundingBoxes(min_size=1, min_area=1) keeps `box` on an image of
// `size`: at least 1 pixel wide and high, of at least 1 square pixel, inside the image
// (NaN is not).
bool keeps_box(const Box& box, cv::Size size);

// The last row of the mask that follow() reads: a decoder may stop there.
int last_source_row(const SampleGeometry& g);

// The source pixel of output pixel `i` of torch's nearest resize of `in` pixels to `out`:
// min(floor(i * float(in / out)), in - 1), in float32 as upsample_nearest computes it.
int nearest_source(int i, int in, int out);

}  // namespace forkfeed
