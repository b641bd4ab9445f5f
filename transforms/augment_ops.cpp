// The AutoAugment family's single ops: torchvision 0.14's _apply_op (autoaugment.py),
// each turned into the transforms/functional.h call it makes, with its magnitude converted
// the same way (shears through atan and degrees, int() for pixels and bits, 1 + m for the
// colour factors).
#include <cmath>
#include <cstddef>
#include <iterator>

#include "transforms/augment.h"

namespace forkfeed::augment {
namespace {

// CPython's math.degrees multiplies by this; F.affine turns it back into radians.
constexpr double kDegreesPerRadian = 180.0 / 3.14159265358979323846;

// Both shears turn about the top-left corner (center=[0, 0]), as the AutoAugment paper's
// PIL transform does.
fn::AffineParams shear(double x_degrees, double y_degrees) {
  fn::AffineParams p;
  p.shear = {x_degrees, y_degrees};
  p.center = std::array<double, 2>{0.0, 0.0};
  return p;
}

// translate=[int(magnitude), ...]: whole pixels, truncated toward zero.
fn::AffineParams translate(double x, double y) {
  fn::AffineParams p;
  p.translate = {std::trunc(x), std::trunc(y)};
  return p;
}

double shear_degrees(double magnitude) { return std::atan(magnitude) * kDegreesPerRadian; }

}  // namespace

const char* name(Op op) {
  static constexpr const char* kNames[] = {
      "Identity", "ShearX",    "ShearY",    "TranslateX", "TranslateY",   "Rotate",   "Brightness", "Color",
      "Contrast", "Sharpness", "Posterize", "Solarize",   "AutoContrast", "Equalize", "Invert",
  };
  static_assert(std::size(kNames) == static_cast<std::size_t>(Op::kInvert) + 1);
  return kNames[static_cast<std::size_t>(op)];
}

void apply(cv::Mat& img, const DrawnOp& op, fn::Interpolation interpolation, const fn::Fill& fill,
           fn::Moves* moves) {
  const double m = op.magnitude;
  const auto warp = [&](const fn::AffineParams& p) {
    fn::affine(img, p, interpolation, fill);
    if (moves != nullptr) moves->push_back({fn::Move::Kind::kAffine, p});
  };
  // One line per op, like _apply_op's table.
  // clang-format off
  switch (op.op) {
    case Op::kIdentity: break;
    case Op::kShearX: warp(shear(shear_degrees(m), 0.0)); break;
    case Op::kShearY: warp(shear(0.0, shear_degrees(m))); break;
    case Op::kTranslateX: warp(translate(m, 0.0)); break;
    case Op::kTranslateY: warp(translate(0.0, m)); break;
    case Op::kRotate: warp(fn::Move::rotation(m, std::nullopt).affine); break;
    case Op::kBrightness: fn::adjust_brightness(img, 1.0 + m); break;
    case Op::kColor: fn::adjust_saturation(img, 1.0 + m); break;
    case Op::kContrast: fn::adjust_contrast(img, 1.0 + m); break;
    case Op::kSharpness: fn::adjust_sharpness(img, 1.0 + m); break;
    case Op::kPosterize: fn::posterize(img, static_cast<int>(m)); break;
    case Op::kSolarize: fn::solarize(img, m); break;
    case Op::kAutoContrast: fn::autocontrast(img); break;
    case Op::kEqualize: fn::equalize(img); break;
    case Op::kInvert: fn::invert(img); break;
  }
  // clang-format on
}

}  // namespace forkfeed::augment
