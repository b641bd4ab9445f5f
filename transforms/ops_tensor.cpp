// The ops after the uint8 pixels: Normalize (with the rule its mean and std keep,
// check_normalisation) and RandomErasing, on the float32 sample in the slot (transforms/ops.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

#include "transforms/crop.h"
#include "transforms/op_draws.h"
#include "transforms/op_factories.h"

namespace forkfeed {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

// mean and std of (x / 255 - mean) / std: finite, std positive, and every output of a
// pixel in [0, 255] finite in float32 (a std of 1e-45, or a mean of 1e300, would fill
// batches with inf, -inf or NaN).
Status check_normalisation(const std::array<float, 3>& mean, const std::array<float, 3>& std) {
  constexpr const char* kChannel[] = {"R", "G", "B"};
  for (int c = 0; c < 3; ++c) {
    const std::string which = std::string(" of channel ") + kChannel[c];
    if (!std::isfinite(mean[c])) {
      return Status::InvalidArgument("mean" + which + " must be a finite number, got " + number(mean[c]));
    }
    if (!std::isfinite(std[c]) || !(std[c] > 0.0f)) {
      return Status::InvalidArgument("std" + which + " must be a finite number > 0, got " + number(std[c]));
    }
    const double largest = std::max(std::abs(0.0 - mean[c]), std::abs(1.0 - mean[c])) / std[c];
    if (!(largest <= std::numeric_limits<float>::max()) || std::fpclassify(std[c]) != FP_NORMAL) {
      return Status::InvalidArgument(
          "std" + which + " = " + number(std[c]) + " with mean " + number(mean[c]) +
          " makes normalised pixels overflow float32; mean and std are fractions of full scale (of x / 255), "
          "as torchvision's Normalize takes them: ImageNet's are mean 0.485 0.456 0.406, std 0.229 0.224 "
          "0.225");
    }
  }
  return Status::Ok();
}

namespace {

class Normalize {
 public:
  Normalize(OpArgs& a, const OpDefaults& defaults) : values_(defaults) {
    read(a, "mean", values_.mean, -kInf);
    read(a, "std", values_.std, 0);
    if (Status s = check_normalisation(values_.mean, values_.std); !s.ok())
      a.fail("mean/std", "are out of range: " + s.message());
    a.flag("inplace", false);
  }
  const OpDefaults& normalisation() const { return values_; }

 private:
  static void read(OpArgs& a, std::string_view name, std::array<float, 3>& out, double lo) {
    const auto v = a.numbers(name, 1, 3, lo, kInf);
    if (!v) return;
    if (v->size() == 2) a.fail(name, "must be one number or three (R, G, B)");
    for (int c = 0; c < 3; ++c) out[c] = static_cast<float>((*v)[v->size() == 3 ? c : 0]);
  }
  OpDefaults values_;
};

class RandomErasing : public TensorOp {
 public:
  explicit RandomErasing(OpArgs& a) {
    p_ = a.number("p", 0.5, 0, 1);
    scale_ = pair_of(a, "scale", {0.02, 0.33}, 0, 1);
    ratio_ = pair_of(a, "ratio", {0.3, 3.3}, 1e-6, kInf);
    // The erased pixels are float32: a value past its range would write inf.
    const char* value = "a number in [-3.4e38, 3.4e38], three of them (R, G, B) or 'random'";
    if (a.is_word("value")) {
      random_ = a.word("value", "random", {"random"}, value) == "random";
    } else {
      if (auto v = a.numbers("value", 1, 3, -kFloatMax, kFloatMax)) {
        if (v->size() == 2) a.fail("value", std::string("must be ") + value);
        for (int c = 0; c < 3; ++c) value_[c] = static_cast<float>((*v)[v->size() == 3 ? c : 0]);
      }
    }
    a.flag("inplace", false);
  }
  void run(TensorSample& s, KeyedRng& rng) override {
    if (!draw(rng, p_)) return;
    // RandomErasing.get_params: ten tries for a box that fits; none: unchanged.
    const double area = static_cast<double>(s.height) * s.width;
    const std::array<double, 2> log_ratio{std::log(ratio_[0]), std::log(ratio_[1])};
    for (int attempt = 0; attempt < 10; ++attempt) {
      const auto [h, w] = draw_box_sides(area, scale_, log_ratio, rng);
      if (!(h < s.height && w < s.width)) continue;
      const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(s.height - h + 1)));
      const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(s.width - w + 1)));
      erase(s, x, y, w, h, rng);
      return;
    }
  }

 private:
  void erase(TensorSample& s, int x, int y, int w, int h, KeyedRng& rng) const {
    const auto rows = static_cast<std::size_t>(s.height), columns = static_cast<std::size_t>(s.width);
    for (int c = 0; c < 3; ++c) {
      for (int row = y; row < y + h; ++row) {
        for (int col = x; col < x + w; ++col) {
          const std::size_t at =
              s.layout == Layout::kNchw ? (c * rows + row) * columns + col : (row * columns + col) * 3 + c;
          s.data[at] = random_ ? static_cast<float>(rng.normal()) : value_[c];
        }
      }
    }
  }
  double p_ = 0.5;
  std::array<double, 2> scale_{}, ratio_{};
  bool random_ = false;
  std::array<float, 3> value_{0, 0, 0};
};

}  // namespace

OpDefaults make_normalize(OpArgs& a, const OpDefaults& defaults) {
  return Normalize(a, defaults).normalisation();
}

std::unique_ptr<TensorOp> make_random_erasing(OpArgs& a) { return std::make_unique<RandomErasing>(a); }

}  // namespace forkfeed
