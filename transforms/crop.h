// The geometry of torchvision's crops and resizes, transcribed so the same image gets
// the same box: pure functions of the image size and the sample's random stream.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "base/keyed_rng.h"

namespace forkfeed {

// Python's round(): half to even.
inline int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

// One try of torchvision's box samplers (RandomResizedCrop's and RandomErasing's
// get_params): an area of `area` x uniform(scale) and an aspect ratio log-uniform in
// [log_ratio[0], log_ratio[1]], drawn in that order; {round(sqrt(a r)), round(sqrt(a / r))}.
std::array<int, 2> draw_box_sides(double area, std::array<double, 2> scale, std::array<double, 2> log_ratio,
                                  KeyedRng& rng);

struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
};

// RandomResizedCrop.get_params(img, scale, ratio): the same algorithm, including the ten
// attempts and the central fallback. Python's round() is round-half-to-even.
CropBox random_resized_crop(int width, int height, KeyedRng& rng, std::array<double, 2> scale = {0.08, 1.0},
                            std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});

// Resize(int): the shorter side becomes `shorter`, the longer one scaled and truncated
// (torchvision's _compute_resized_output_size); {width, height}, saturated at INT32_MAX
// for a 1 x 10^7 strip (the caller refuses anything that large).
std::array<int, 2> resized_size(int width, int height, int shorter);

// CenterCrop's offset along one side: round((length - crop) / 2).
int center_crop_offset(int length, int crop);

// round(size / 0.875): 256 for 224, the usual ImageNet eval resize.
int eval_resize_for(int size);

// A box: x1, y1, x2, y2 in pixels from the image's top-left corner (pixel (i, j) covers
// [j, j + 1) x [i, i + 1)), float32 as torchvision's BoundingBoxes hold them.
using Box = std::array<float, 4>;

// A rectangle in an image's own pixel coordinates; fractional where a resize maps it.
struct Region {
  double x = 0, y = 0, width = 0, height = 0;
};

// Where one output sample comes from in the decoded image: `source`, resized to the
// output's rectangle x, y, width, height — all of the output, unless a crop padded the
// image (RandomCrop's padding), when the rest of the output is `fill` and `source` is the
// part of the image that shows (width 0 when none does). Every pipeline's geometry reduces
// to this (transforms/pipeline.h), which is what lets a decoder decode only `source` (the
// fused path).
struct SampleWindow {
  Region source;
  int x = 0, y = 0, width = 0, height = 0;
  std::array<float, 3> fill{};
  bool empty() const { return width <= 0 || height <= 0; }
};

}  // namespace forkfeed
