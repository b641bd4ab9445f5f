// The ops of a pipeline, a base per stage (GeometryOp, PixelOp, TensorOp; Normalize is its
// values), made from their calls (make_op) and run by transforms/pipeline.cpp; the ops
// themselves are in transforms/ops_*.cpp, by family.
// Every op is torchvision's of the same name: the same arguments and defaults, the same
// random draws (from the sample's KeyedRng instead of torch's global generator), the
// same arithmetic (transforms/functional.h, transforms/augment.h).
//
// An op works at one of four stages, in this order in every pipeline:
//   geometry:  Resize, RandomResize, CenterCrop, RandomCrop, RandomResizedCrop. They only
//              choose which part of the image becomes the sample (padded where RandomCrop
//              pads) and its size, so they are planned from the image's header and done by
//              the decoder (the fused path).
//   pixels:    flips, colour, blur, rotation, affine, the AutoAugment family: on the
//              small uint8 sample, in place.
//   normalize: Normalize: uint8 to float32, written into the slot.
//   tensor:    RandomErasing: on the float32 sample in the slot.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <variant>

#include <opencv2/core/mat.hpp>
#include "base/keyed_rng.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "transforms/crop.h"
#include "transforms/functional.h"
#include "transforms/pipeline_spec.h"

namespace forkfeed {

enum class Stage { kGeometry, kPixels, kNormalize, kTensor };

// What a geometry op does to a width x height image: keeps the crop x, y, width, height
// (in its pixels), then resizes that to out_width x out_height (the crop's own size: no
// resize). A crop may reach past the image (RandomCrop's padding: x or y negative, or past
// the far edge): what it takes from there is `fill` in an image, a mask's own fill in a mask.
struct GeometryStep {
  int x = 0, y = 0, width = 0, height = 0;
  int out_width = 0, out_height = 0;
  fn::Fill fill{};
  // RandomIoUCrop's: the boxes whose centre is not inside the crop are dropped.
  bool centred_boxes_only = false;
  bool resizes() const { return out_width != width || out_height != height; }
  // Whether the crop stays inside a width x height image (takes no padding).
  bool inside(int image_width, int image_height) const {
    return x >= 0 && y >= 0 && x + width <= image_width && y + height <= image_height;
  }
};

// The normalised float32 sample in its slot, for the tensor ops.
struct TensorSample {
  float* data;
  int height, width;
  Layout layout;  // kNhwc or kNchw
};

// What an op may default to from the loader's options.
struct OpDefaults {
  std::array<float, 3> mean;
  std::array<float, 3> std;
};

// mean and std of (x / 255 - mean) / std: finite, std positive, and every output of a
// pixel in [0, 255] finite in float32 — for the options' mean and std and Normalize's.
Status check_normalisation(const std::array<float, 3>& mean, const std::array<float, 3>& std);

// Geometry: a crop and a resize of the image, drawn; planned from the image's header.
class GeometryOp {
 public:
  virtual ~GeometryOp() = default;

  // What the op does to a width x height image, drawing from `rng`; bad data when the
  // image cannot give it (smaller than a crop), naming the op.
  virtual Result<GeometryStep> step(int width, int height, KeyedRng& rng) const = 0;
  // The output's {height, width} for an input of `in` ({-1, -1}: depends on the image),
  // without looking at pixels; what the pipeline checks at open.
  virtual std::array<int, 2> shape(std::array<int, 2> in) const { return in; }
  // The smallest {height, width} the op's output can have, whatever the image ({0, 0}: no
  // bound); what the pipeline weighs against max_pixels at open.
  virtual std::array<int, 2> least_shape() const { return {0, 0}; }
  // Whether the op may resample the image (Resize, RandomResizedCrop), not only crop it.
  virtual bool resamples() const { return false; }
  // Whether the op may crop past the image's edges (RandomCrop's padding).
  virtual bool pads() const { return false; }
  // Whether the op draws from the sample's boxes (RandomIoUCrop); then the pipeline calls
  // step_among() instead of step(), with the boxes as the ops before it moved them (XYXY,
  // in the width x height image's pixels).
  virtual bool needs_boxes() const { return false; }
  virtual Result<GeometryStep> step_among(int width, int height, KeyedRng& rng,
                                          std::span<const Box> /*boxes*/) const {
    return step(width, height, rng);
  }

 protected:
  // The width x height image as it is: no crop, no resize.
  static GeometryStep whole(int width, int height) {
    return GeometryStep{0, 0, width, height, width, height};
  }
};

// Pixels: on the small uint8 sample, in place.
class PixelOp {
 public:
  virtual ~PixelOp() = default;

  // Changes the uint8 sample in place. An op that moves pixels (a flip, a warp) appends
  // what it did to `moves` when that is not null: the sample's mask repeats it.
  virtual void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) = 0;
  // Whether `moves` can say what the op does to where pixels are — every op but AugMix,
  // which blends copies of the sample moved in different ways.
  virtual bool repeatable() const { return true; }
  // A horizontal mirror of the sample, drawn (RandomHorizontalFlip): the pipeline folds it
  // into the store when every op after it commutes with mirroring.
  virtual bool mirrors(KeyedRng& /*rng*/) const { return false; }
  virtual bool is_mirror() const { return false; }
  // Whether the op gives the same result on a mirrored sample, mirrored (colour ops).
  virtual bool commutes_with_mirror() const { return false; }
  // Whether the op only moves pixels, changing no value (flips): it gives the same result
  // before Normalize as after it.
  virtual bool only_moves_pixels() const { return false; }
};

// Tensor: on the float32 sample in the slot, in place.
class TensorOp {
 public:
  virtual ~TensorOp() = default;
  virtual void run(TensorSample& sample, KeyedRng& rng) = 0;
};

// An op made from its call: one of its stage's, in the order of Stage. Normalize runs no
// code of its own (the store normalises as it writes the slot): it is its mean and std.
using StagedOp = std::variant<std::unique_ptr<GeometryOp>, std::unique_ptr<PixelOp>, OpDefaults,
                              std::unique_ptr<TensorOp>>;
static_assert(std::is_same_v<
              std::variant_alternative_t<static_cast<std::size_t>(Stage::kNormalize), StagedOp>, OpDefaults>);
static_assert(std::variant_size_v<StagedOp> == static_cast<std::size_t>(Stage::kTensor) + 1);
inline Stage stage_of(const StagedOp& op) { return static_cast<Stage>(op.index()); }

// The op `call` names, checked; an error names the op and the argument. The table of the
// ops that exist is transforms/op_table.cpp.
Result<StagedOp> make_op(const OpCall& call, const OpDefaults& defaults);

}  // namespace forkfeed
