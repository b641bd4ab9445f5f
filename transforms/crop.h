// Where in the decoded image a sample's output comes from: torchvision's
// RandomResizedCrop (+ horizontal flip) for training, resize + center crop for eval.
// Pure functions of the image size and the sample's random stream.
#pragma once

#include <cstdint>

#include "base/keyed_rng.h"

namespace forkfeed {

struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
  bool flip = false;
};

// torchvision.transforms.RandomResizedCrop.get_params with scale (0.08, 1) and ratio
// (3/4, 4/3), followed by RandomHorizontalFlip(p=0.5); same algorithm, including the
// ten attempts and the central fallback. Python's round() is round-half-to-even.
CropBox random_resized_crop(int width, int height, KeyedRng& rng);

// Eval: the image is resized so its shorter side is `resize_to` (the longer side
// scaled and truncated, as torchvision's Resize(int) does), then the center
// size x size is kept.
struct EvalPlan {
  int resized_width = 0, resized_height = 0;
  CropBox crop;  // in resized coordinates
};
EvalPlan center_crop_plan(int width, int height, int size);

// round(size / 0.875): 256 for 224, the usual ImageNet eval resize.
int eval_resize_for(int size);

// A rectangle in an image's own pixel coordinates; fractional where a resize maps it.
struct Region {
  double x = 0, y = 0, width = 0, height = 0;
};

// Where one output sample comes from in the decoded image: `source` is resized to the
// output size, then mirrored if `flip`. Both transforms reduce to this, which is what
// lets a decoder decode only `source` (the fused path).
struct SampleWindow {
  Region source;
  bool flip = false;
};

// Train: the RandomResizedCrop box, exactly.
SampleWindow train_window(int width, int height, KeyedRng& rng);
// Eval: the part of the original image that the center crop of the resized image shows.
SampleWindow eval_window(const EvalPlan& plan, int width, int height);

}  // namespace forkfeed
