// The geometric and AutoAugment ops of transform_ops (see transform_ops.h). INTERP is 0
// for nearest, 1 for bilinear; FILL* is torchvision's fill per channel (0 0 0: None);
// CX CY, when given, is `center` in pixels from the top-left corner.
//   affine ANGLE TX TY SCALE SHX SHY INTERP FILLR FILLG FILLB [CX CY]
//   rotate ANGLE INTERP FILLR FILLG FILLB [CX CY]
//   aa OPINDEX MAGNITUDE INTERP [FILLR FILLG FILLB]
// `aa` is autoaugment._apply_op(img, op, MAGNITUDE, INTERP, fill) with op the OPINDEX-th
// name of augment::Op (Identity, ShearX, ShearY, TranslateX, ... Invert).
#include <cmath>
#include <stdexcept>

#include "python/tests/reference/transform_ops.h"
#include "transforms/augment.h"
#include "transforms/functional.h"

namespace {

using forkfeed::fn::Fill;
using forkfeed::fn::Interpolation;
using Center = std::optional<std::array<double, 2>>;

void expect_args(const std::string& name, const std::vector<double>& args, size_t n, size_t optional) {
  if (args.size() != n && args.size() != n + optional) {
    throw std::invalid_argument(name + ": expected " + std::to_string(n) + " or " +
                                std::to_string(n + optional) + " arguments, got " +
                                std::to_string(args.size()));
  }
}

Interpolation interpolation(double code) {
  if (code != 0 && code != 1) throw std::invalid_argument("INTERP must be 0 (nearest) or 1 (bilinear)");
  return code == 0 ? Interpolation::kNearest : Interpolation::kBilinear;
}

Fill fill_at(const std::vector<double>& args, size_t first) {
  if (args.size() < first + 3) return {0, 0, 0};
  return {static_cast<float>(args[first]), static_cast<float>(args[first + 1]),
          static_cast<float>(args[first + 2])};
}

Center center_at(const std::vector<double>& args, size_t first) {
  if (args.size() < first + 2) return std::nullopt;
  return std::array<double, 2>{args[first], args[first + 1]};
}

void affine(const std::vector<double>& args, cv::Mat& img) {
  expect_args("affine", args, 10, 2);
  forkfeed::fn::AffineParams p;
  p.angle = args[0];
  p.translate = {args[1], args[2]};
  if (args[3] <= 0) throw std::invalid_argument("affine: SCALE must be positive");
  p.scale = args[3];
  p.shear = {args[4], args[5]};
  p.center = center_at(args, 10);
  forkfeed::fn::affine(img, p, interpolation(args[6]), fill_at(args, 7));
}

void rotate(const std::vector<double>& args, cv::Mat& img) {
  expect_args("rotate", args, 5, 2);
  forkfeed::fn::rotate(img, args[0], interpolation(args[1]), fill_at(args, 2), center_at(args, 5));
}

void auto_augment_op(const std::vector<double>& args, cv::Mat& img) {
  expect_args("aa", args, 3, 3);
  const auto last = static_cast<int>(forkfeed::augment::Op::kInvert);
  if (args[0] < 0 || args[0] > last || args[0] != std::floor(args[0])) {
    throw std::invalid_argument("aa: OPINDEX must be 0.." + std::to_string(last));
  }
  const forkfeed::augment::DrawnOp op{static_cast<forkfeed::augment::Op>(args[0]), args[1], -1};
  forkfeed::augment::apply(img, op, interpolation(args[2]), fill_at(args, 3));
}

}  // namespace

bool geometry_op(const std::string& name, const std::vector<double>& args, cv::Mat& img) {
  if (name == "affine") {
    affine(args, img);
  } else if (name == "rotate") {
    rotate(args, img);
  } else if (name == "aa") {
    auto_augment_op(args, img);
  } else {
    return false;
  }
  return true;
}
