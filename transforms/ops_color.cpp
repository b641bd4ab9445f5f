// The pixel ops that change values, not places: colour (ColorJitter,
// RandomPhotometricDistort, Grayscale), GaussianBlur, and torchvision's Random* wrappers of
// one function of transforms/functional.h, each applied with probability p (transforms/ops.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "transforms/functional.h"
#include "transforms/op_draws.h"
#include "transforms/op_factories.h"

namespace forkfeed {
namespace {

// An op applied with probability p (torchvision's Random* wrappers of one function).
class Sometimes : public PixelOp {
 public:
  Sometimes(OpArgs& a, double default_p, std::function<void(cv::Mat&)> apply, bool commutes)
      : apply_(std::move(apply)), commutes_(commutes) {
    p_ = a.number("p", default_p, 0, 1);
  }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves*) override {
    if (draw(rng, p_)) apply_(sample);
  }
  bool commutes_with_mirror() const override { return commutes_; }

 private:
  double p_ = 0;
  std::function<void(cv::Mat&)> apply_;
  bool commutes_;
};

// ColorJitter's ranges: a number v is [max(0, 1 - v), 1 + v] (hue: [-v, v]); a range
// that can only give the identity is None, as torchvision's _check_input makes it.
std::optional<std::array<double, 2>> jitter(OpArgs& a, std::string_view name, bool hue) {
  const double center = hue ? 0 : 1, bound = hue ? 0.5 : kFloatMax;
  const auto v = a.numbers(name, 2, 2, hue ? -0.5 : 0, bound);
  if (!v) return std::nullopt;
  std::array<double, 2> range{};
  if (v->size() == 1) {
    if ((*v)[0] < 0 || (hue && (*v)[0] > 0.5)) {
      a.fail(name, hue ? "must be in [0, 0.5] as one number" : "must be non-negative as one number");
    }
    range = {hue ? -(*v)[0] : std::max(0.0, center - (*v)[0]), center + (*v)[0]};
  } else {
    range = {(*v)[0], (*v)[1]};
    if (range[0] > range[1]) a.fail(name, "must be a tuple (min, max) with min <= max");
  }
  if (range[0] == center && range[1] == center) return std::nullopt;
  return range;
}

class ColorJitter : public PixelOp {
 public:
  explicit ColorJitter(OpArgs& a) {
    ranges_[0] = jitter(a, "brightness", false);
    ranges_[1] = jitter(a, "contrast", false);
    ranges_[2] = jitter(a, "saturation", false);
    ranges_[3] = jitter(a, "hue", true);
  }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves*) override {
    // get_params: torch.randperm(4), then a factor for each op that is not None.
    std::array<int, 4> order{0, 1, 2, 3};
    for (int i = 3; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
    std::array<double, 4> factor{};
    for (int i = 0; i < 4; ++i) {
      if (ranges_[i]) factor[i] = rng.uniform((*ranges_[i])[0], (*ranges_[i])[1]);
    }
    for (int i : order) {
      if (!ranges_[i]) continue;
      switch (i) {
        case 0: fn::adjust_brightness(sample, factor[0]); break;
        case 1: fn::adjust_contrast(sample, factor[1]); break;
        case 2: fn::adjust_saturation(sample, factor[2]); break;
        default: fn::adjust_hue(sample, factor[3]); break;
      }
    }
  }
  bool commutes_with_mirror() const override { return true; }

 private:
  std::array<std::optional<std::array<double, 2>>, 4> ranges_;
};

// v2.RandomPhotometricDistort (the SSD recipe's): brightness, contrast, saturation and hue
// each with probability p, a factor drawn from its range as ColorJitter draws one; contrast
// before saturation and hue or after them, by a coin; then, with probability p, the
// channels in a random order. Ranges as ColorJitter reads them, v2's defaults when absent.
class RandomPhotometricDistort : public PixelOp {
 public:
  explicit RandomPhotometricDistort(OpArgs& a) {
    constexpr std::array<std::string_view, 4> kNames{"brightness", "contrast", "saturation", "hue"};
    constexpr std::array<std::array<double, 2>, 4> kDefaults{
        {{0.875, 1.125}, {0.5, 1.5}, {0.5, 1.5}, {-0.05, 0.05}}};
    for (std::size_t i = 0; i < 4; ++i) {
      ranges_[i] = a.present(kNames[i]) ? jitter(a, kNames[i], i == 3) : kDefaults[i];
    }
    p_ = a.number("p", 0.5, 0, 1);
  }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves*) override {
    std::array<std::optional<double>, 4> factor;  // _get_params: a coin, then the factor
    for (std::size_t i = 0; i < 4; ++i) {
      if (draw(rng, p_) && ranges_[i]) factor[i] = rng.uniform((*ranges_[i])[0], (*ranges_[i])[1]);
    }
    const bool contrast_before = draw(rng, 0.5);
    std::optional<std::array<int, 3>> order;
    if (draw(rng, p_)) {  // torch.randperm(3)
      order = std::array<int, 3>{0, 1, 2};
      for (int i = 2; i > 0; --i)
        std::swap((*order)[i], (*order)[rng.below(static_cast<std::uint64_t>(i) + 1)]);
    }
    if (factor[0]) fn::adjust_brightness(sample, *factor[0]);
    if (factor[1] && contrast_before) fn::adjust_contrast(sample, *factor[1]);
    if (factor[2]) fn::adjust_saturation(sample, *factor[2]);
    if (factor[3]) fn::adjust_hue(sample, *factor[3]);
    if (factor[1] && !contrast_before) fn::adjust_contrast(sample, *factor[1]);
    if (order) fn::permute_channels(sample, *order);
  }
  bool commutes_with_mirror() const override { return true; }

 private:
  std::array<std::optional<std::array<double, 2>>, 4> ranges_;
  double p_ = 0.5;
};

class Grayscale : public PixelOp {
 public:
  explicit Grayscale(OpArgs& a) {
    if (a.integer("num_output_channels", 1, 1, 3) != 3) {
      a.fail("num_output_channels", "must be 3: batches have three channels (write Grayscale(3))");
    }
  }
  void run(cv::Mat& sample, KeyedRng&, fn::Moves*) override { fn::rgb_to_grayscale(sample); }
  bool commutes_with_mirror() const override { return true; }
};

class GaussianBlur : public PixelOp {
 public:
  explicit GaussianBlur(OpArgs& a) {
    a.require("kernel_size");
    const auto k = a.numbers("kernel_size", 2, 2, 1, 255).value_or(std::vector<double>{1});
    kernel_ = {static_cast<int>(k[0]), static_cast<int>(k.back())};
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (k[i] != std::floor(k[i]) || static_cast<int>(k[i]) % 2 == 0) {
        a.fail("kernel_size", "must be odd and positive integers");
      }
    }
    const auto s = a.numbers("sigma", 2, 2, kFloatMin, kFloatMax).value_or(std::vector<double>{0.1, 2.0});
    sigma_ = {s[0], s.back()};
    if (sigma_[0] <= 0 || sigma_[0] > sigma_[1])
      a.fail("sigma", "must be positive, as a number or (min, max)");
  }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves*) override {
    const double sigma = rng.uniform(sigma_[0], sigma_[1]);
    fn::gaussian_blur(sample, {kernel_[0], kernel_[1]}, {sigma, sigma});
  }
  bool commutes_with_mirror() const override { return true; }

 private:
  std::array<int, 2> kernel_{};
  std::array<double, 2> sigma_{};
};

}  // namespace

std::unique_ptr<PixelOp> make_color_jitter(OpArgs& a) { return std::make_unique<ColorJitter>(a); }
std::unique_ptr<PixelOp> make_random_photometric_distort(OpArgs& a) {
  return std::make_unique<RandomPhotometricDistort>(a);
}
std::unique_ptr<PixelOp> make_grayscale(OpArgs& a) { return std::make_unique<Grayscale>(a); }
std::unique_ptr<PixelOp> make_gaussian_blur(OpArgs& a) { return std::make_unique<GaussianBlur>(a); }

std::unique_ptr<PixelOp> make_random_grayscale(OpArgs& a) {
  return std::make_unique<Sometimes>(a, 0.1, fn::rgb_to_grayscale, true);
}

std::unique_ptr<PixelOp> make_random_posterize(OpArgs& a) {
  a.require("bits");
  const int bits = a.integer("bits", 8, 0, 8);
  return std::make_unique<Sometimes>(
      a, 0.5, [bits](cv::Mat& m) { fn::posterize(m, bits); }, true);
}

std::unique_ptr<PixelOp> make_random_solarize(OpArgs& a) {
  a.require("threshold");
  const double threshold = a.number("threshold", 256, 0, 256);
  return std::make_unique<Sometimes>(
      a, 0.5, [threshold](cv::Mat& m) { fn::solarize(m, threshold); }, true);
}

std::unique_ptr<PixelOp> make_random_adjust_sharpness(OpArgs& a) {
  a.require("sharpness_factor");
  const double factor = a.number("sharpness_factor", 1, 0, kInf);
  return std::make_unique<Sometimes>(
      a, 0.5, [factor](cv::Mat& m) { fn::adjust_sharpness(m, factor); }, true);
}

std::unique_ptr<PixelOp> make_random_autocontrast(OpArgs& a) {
  return std::make_unique<Sometimes>(a, 0.5, fn::autocontrast, true);
}

std::unique_ptr<PixelOp> make_random_equalize(OpArgs& a) {
  return std::make_unique<Sometimes>(a, 0.5, fn::equalize, true);
}

std::unique_ptr<PixelOp> make_random_invert(OpArgs& a) {
  return std::make_unique<Sometimes>(a, 0.5, fn::invert, true);
}

}  // namespace forkfeed
