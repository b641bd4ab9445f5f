// The deterministic image ops of torchvision.transforms.functional, on one sample: RGB
// uint8, interleaved (CV_8UC3, any size, continuous or a view), changed in place. Each
// follows torchvision 0.14's tensor implementation (functional_tensor.py) — the same
// float arithmetic, the same rounding or truncation back to uint8 — so that a sample
// matches what torchvision makes of the same uint8 tensor within one level
// (python/tests/test_transform_fidelity.py measures it op by op).
//
// The random transforms (transforms/pipeline.cpp) and the AutoAugment family
// (transforms/augment.h) draw their parameters from the sample's KeyedRng and call these.
#pragma once

#include <array>
#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <optional>
#include <vector>

namespace forkfeed::fn {

enum class Interpolation { kNearest, kBilinear };

// Colour for pixels that a geometric op moves in from outside the image (torchvision's
// `fill`; None is 0).
using Fill = std::array<float, 3>;

void adjust_brightness(cv::Mat& img, double factor);
// adjust_contrast, adjust_saturation and adjust_hue (hue_factor in [-0.5, 0.5]) work on
// eight pixels at once where the CPU has AVX2: the same bytes as their _scalar twins, the
// pixel-by-pixel loops, which tests hold them to.
void adjust_contrast(cv::Mat& img, double factor);
void adjust_contrast_scalar(cv::Mat& img, double factor);
void adjust_saturation(cv::Mat& img, double factor);
void adjust_saturation_scalar(cv::Mat& img, double factor);
void adjust_hue(cv::Mat& img, double hue_factor);
void adjust_hue_scalar(cv::Mat& img, double hue_factor);
// permute_channels(img, permutation): channel c becomes channel permutation[c] of img.
void permute_channels(cv::Mat& img, const std::array<int, 3>& permutation);
// rgb_to_grayscale(num_output_channels=3): the three channels equal.
void rgb_to_grayscale(cv::Mat& img);
// bits in [0, 8].
void posterize(cv::Mat& img, int bits);
void solarize(cv::Mat& img, double threshold);
void autocontrast(cv::Mat& img);
void equalize(cv::Mat& img);
void adjust_sharpness(cv::Mat& img, double factor);
void invert(cv::Mat& img);
// kernel sizes odd and positive, sigmas positive; reflect padding, as torchvision.
void gaussian_blur(cv::Mat& img, std::array<int, 2> kernel_size, std::array<double, 2> sigma);
void hflip(cv::Mat& img);
void vflip(cv::Mat& img);

// F.affine's parameters: degrees, pixels, a factor, degrees; `center` in pixels from the
// top-left corner (None: the image's center).
struct AffineParams {
  double angle = 0;
  std::array<double, 2> translate = {0, 0};
  double scale = 1;
  std::array<double, 2> shear = {0, 0};
  std::optional<std::array<double, 2>> center;
};
// The width x height rectangle of img at x, y, as F.pad then F.crop make it where the
// rectangle reaches past img (RandomCrop's padding): `fill` there. A view of img when the
// rectangle is inside it, else a new image. img has 1 or 3 channels.
cv::Mat crop(const cv::Mat& img, int x, int y, int width, int height, const Fill& fill);
// F.affine(img, angle, translate, scale, shear, interpolation, fill, center). img is
// uint8 with 3 channels, or (nearest only) 1 channel of uint8 or uint16: a mask.
void affine(cv::Mat& img, const AffineParams& params, Interpolation interpolation, const Fill& fill);
// The forward matrix of F.affine's parameters on a width x height image, in pixels from its
// top-left corner, [a, b, c, d, e, f]: x' = a x + b y + c, y' = d x + e y + f —
// _get_inverse_affine_matrix(center, ..., inverted=False), the center (width / 2,
// height / 2) when params.center is none, as torchvision.transforms.v2 moves boxes.
std::array<double, 6> affine_matrix(const AffineParams& params, int width, int height);
// F.rotate(img, angle, interpolation, expand=False, center, fill).
void rotate(cv::Mat& img, double angle, Interpolation interpolation, const Fill& fill,
            std::optional<std::array<double, 2>> center = std::nullopt);

// What a geometric op did to where a sample's pixels are, so that its other fields (a
// mask) can do the same: a flip, or F.affine's parameters (F.rotate(a) is F.affine(-a)).
struct Move {
  enum class Kind : std::uint8_t { kHflip, kVflip, kAffine };
  Kind kind = Kind::kHflip;
  AffineParams affine;  // kAffine
  static Move rotation(double angle, std::optional<std::array<double, 2>> center) {
    Move m{Kind::kAffine, {}};
    m.affine.angle = -angle;
    m.affine.center = center;
    return m;
  }
};
// A sample's moves, in the order its ops made them.
using Moves = std::vector<Move>;
// Does `move` to img (as affine() takes it), nearest where it warps, `fill` moved in.
void repeat(cv::Mat& img, const Move& move, const Fill& fill);

}  // namespace forkfeed::fn
