// The AutoAugment family of torchvision.transforms (autoaugment.py, 0.14): AutoAugment
// (ImageNet policy), RandAugment, TrivialAugmentWide and AugMix. Each draws which ops to
// apply, and how strongly, from the sample's own KeyedRng (never from a global
// generator), so a sample's pixels depend only on (seed, epoch, index), and applies them
// with transforms/functional.h.
//
// draw() and apply() are separate so a test can count what a policy draws (the
// frequencies of ops and magnitudes) without touching pixels.
#pragma once

#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <vector>

#include "base/keyed_rng.h"
#include "transforms/functional.h"

namespace forkfeed::augment {

// torchvision's op names, in _augmentation_space's order.
enum class Op {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};
const char* name(Op op);

// One op as drawn: its signed magnitude in the op's own units (degrees for Rotate, pixels
// for Translate, bits for Posterize, ...), exactly what torchvision passes to _apply_op;
// `bin` is the magnitude's index in the op's linspace (-1 for ops without magnitudes), for
// the tests' histograms.
struct DrawnOp {
  Op op = Op::kIdentity;
  double magnitude = 0;
  int bin = -1;
};

// _apply_op(img, op, magnitude, interpolation, fill). A shear, translation or rotation is
// appended to `moves` when that is not null.
void apply(cv::Mat& img, const DrawnOp& op, fn::Interpolation interpolation, const fn::Fill& fill,
           fn::Moves* moves = nullptr);

// Every policy: draw() appends what it draws for one width x height image to `out` (which
// it clears first); run() draws and applies, appending the geometric ops to `moves`.
struct AutoAugment {  // policy: ImageNet
  fn::Interpolation interpolation = fn::Interpolation::kNearest;
  fn::Fill fill = {0, 0, 0};
  void draw(KeyedRng& rng, int width, int height, std::vector<DrawnOp>& out) const;
  void run(cv::Mat& img, KeyedRng& rng, std::vector<DrawnOp>& scratch, fn::Moves* moves = nullptr) const;
};

struct RandAugment {
  int num_ops = 2;
  int magnitude = 9;
  int num_magnitude_bins = 31;
  fn::Interpolation interpolation = fn::Interpolation::kNearest;
  fn::Fill fill = {0, 0, 0};
  void draw(KeyedRng& rng, int width, int height, std::vector<DrawnOp>& out) const;
  void run(cv::Mat& img, KeyedRng& rng, std::vector<DrawnOp>& scratch, fn::Moves* moves = nullptr) const;
};

struct TrivialAugmentWide {
  int num_magnitude_bins = 31;
  fn::Interpolation interpolation = fn::Interpolation::kNearest;
  fn::Fill fill = {0, 0, 0};
  void draw(KeyedRng& rng, int width, int height, std::vector<DrawnOp>& out) const;
  void run(cv::Mat& img, KeyedRng& rng, std::vector<DrawnOp>& scratch, fn::Moves* moves = nullptr) const;
};

// AugMix mixes several chains of ops with Dirichlet weights and the result with the
// original by a Beta draw; its draws are the chains' ops and the weights. No move says
// what it does to where pixels are: a sample with a mask refuses it (PixelOp::repeatable).
struct AugMix {
  int severity = 3;
  int mixture_width = 3;
  int chain_depth = -1;  // -1: each chain 1 to 3 ops, drawn
  double alpha = 1.0;
  bool all_ops = true;
  fn::Interpolation interpolation = fn::Interpolation::kBilinear;
  fn::Fill fill = {0, 0, 0};
  void run(cv::Mat& img, KeyedRng& rng) const;
};

}  // namespace forkfeed::augment
