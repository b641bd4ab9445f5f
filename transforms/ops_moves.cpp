// The pixel ops that move pixels: the flips, RandomRotation and RandomAffine, each of which
// says what it did (fn::Move) for a sample's mask to repeat (transforms/ops.h).
#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "transforms/crop.h"
#include "transforms/functional.h"
#include "transforms/op_draws.h"
#include "transforms/op_factories.h"

namespace forkfeed {
namespace {

using fn::Interpolation;

class RandomHorizontalFlip : public PixelOp {
 public:
  explicit RandomHorizontalFlip(OpArgs& a) { p_ = a.number("p", 0.5, 0, 1); }
  bool is_mirror() const override { return true; }
  bool mirrors(KeyedRng& rng) const override { return draw(rng, p_); }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) override {
    if (!mirrors(rng)) return;
    fn::hflip(sample);
    if (moves != nullptr) moves->push_back({fn::Move::Kind::kHflip, {}});
  }
  bool commutes_with_mirror() const override { return true; }
  bool only_moves_pixels() const override { return true; }

 private:
  double p_ = 0.5;
};

class RandomVerticalFlip : public PixelOp {
 public:
  explicit RandomVerticalFlip(OpArgs& a) { p_ = a.number("p", 0.5, 0, 1); }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) override {
    if (!draw(rng, p_)) return;
    fn::vflip(sample);
    if (moves != nullptr) moves->push_back({fn::Move::Kind::kVflip, {}});
  }
  bool commutes_with_mirror() const override { return true; }
  bool only_moves_pixels() const override { return true; }

 private:
  double p_ = 0.5;
};

// A degrees argument: d is (-d, d), or (min, max).
std::array<double, 2> degrees_of(OpArgs& a, std::string_view name) {
  const auto d = a.numbers(name, 2, 2, -kFloatMax, kFloatMax).value_or(std::vector<double>{0});
  if (d.size() == 1) {
    if (d[0] < 0) a.fail(name, "must be non-negative as a single number");
    return drawn(a, name, {-d[0], d[0]});
  }
  if (d[0] > d[1]) a.fail(name, "must be a tuple (min, max) with min <= max");
  return drawn(a, name, {d[0], d[1]});
}

std::optional<std::array<double, 2>> center_of(OpArgs& a) {
  const auto c = a.numbers("center", 2, 2, -kInf, kInf);
  if (!c) return std::nullopt;
  if (c->size() != 2) a.fail("center", "must be (x, y)");
  return std::array<double, 2>{(*c)[0], c->back()};
}

class RandomRotation : public PixelOp {
 public:
  explicit RandomRotation(OpArgs& a) {
    a.require("degrees");
    degrees_ = degrees_of(a, "degrees");
    interpolation_ = a.interpolation("interpolation", Interpolation::kNearest,
                                     {Interpolation::kNearest, Interpolation::kBilinear});
    if (a.flag("expand", false)) a.fail("expand", "is not supported: the output size must stay the same");
    center_ = center_of(a);
    fill_ = a.fill("fill");
  }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) override {
    const double angle = rng.uniform(degrees_[0], degrees_[1]);
    fn::rotate(sample, angle, interpolation_, fill_, center_);
    if (moves != nullptr) moves->push_back(fn::Move::rotation(angle, center_));
  }

 private:
  std::array<double, 2> degrees_{};
  Interpolation interpolation_ = Interpolation::kNearest;
  std::optional<std::array<double, 2>> center_;
  fn::Fill fill_{};
};

class RandomAffine : public PixelOp {
 public:
  explicit RandomAffine(OpArgs& a) {
    a.require("degrees");
    degrees_ = degrees_of(a, "degrees");
    if (auto t = a.numbers("translate", 2, 2, 0, 1)) {
      if (t->size() != 2) a.fail("translate", "must be (max_dx, max_dy), fractions of the width and height");
      translate_ = std::array<double, 2>{(*t)[0], t->back()};
    }
    if (auto s = a.numbers("scale", 2, 2, kFloatMin, kFloatMax)) {
      if (s->size() != 2 || (*s)[0] <= 0 || (*s)[0] > (*s)[1])
        a.fail("scale", "must be (min, max), positive");
      scale_ = std::array<double, 2>{(*s)[0], s->back()};
    }
    if (auto sh = a.numbers("shear", 2, 4, -kFloatMax, kFloatMax)) {
      if (sh->size() == 1) {
        if ((*sh)[0] < 0) a.fail("shear", "must be non-negative as a single number");
        shear_ = {-(*sh)[0], (*sh)[0], 0, 0};
      } else if (sh->size() == 2) {
        shear_ = {(*sh)[0], (*sh)[1], 0, 0};
      } else if (sh->size() == 4) {
        shear_ = {(*sh)[0], (*sh)[1], (*sh)[2], (*sh)[3]};
        shear_y_ = true;
      } else {
        a.fail("shear", "must be a number, (min_x, max_x) or (min_x, max_x, min_y, max_y)");
      }
      has_shear_ = true;
      drawn(a, "shear", {shear_[0], shear_[1]});
      drawn(a, "shear", {shear_[2], shear_[3]});
    }
    interpolation_ = a.interpolation("interpolation", Interpolation::kNearest,
                                     {Interpolation::kNearest, Interpolation::kBilinear});
    fill_ = a.fill("fill");
    center_ = center_of(a);
  }
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) override {
    // RandomAffine.get_params, in its order: angle, translation, scale, shear.
    fn::AffineParams p;
    p.angle = rng.uniform(degrees_[0], degrees_[1]);
    if (translate_) {
      const double max_dx = (*translate_)[0] * sample.cols, max_dy = (*translate_)[1] * sample.rows;
      p.translate = {static_cast<double>(round_half_even(rng.uniform(-max_dx, max_dx))),
                     static_cast<double>(round_half_even(rng.uniform(-max_dy, max_dy)))};
    }
    if (scale_) p.scale = rng.uniform((*scale_)[0], (*scale_)[1]);
    if (has_shear_) {
      p.shear[0] = rng.uniform(shear_[0], shear_[1]);
      if (shear_y_) p.shear[1] = rng.uniform(shear_[2], shear_[3]);
    }
    p.center = center_;
    fn::affine(sample, p, interpolation_, fill_);
    if (moves != nullptr) moves->push_back({fn::Move::Kind::kAffine, p});
  }

 private:
  std::array<double, 2> degrees_{};
  std::optional<std::array<double, 2>> translate_, scale_;
  std::array<double, 4> shear_{};
  bool has_shear_ = false, shear_y_ = false;
  Interpolation interpolation_ = Interpolation::kNearest;
  fn::Fill fill_{};
  std::optional<std::array<double, 2>> center_;
};

}  // namespace

std::unique_ptr<PixelOp> make_random_horizontal_flip(OpArgs& a) {
  return std::make_unique<RandomHorizontalFlip>(a);
}
std::unique_ptr<PixelOp> make_random_vertical_flip(OpArgs& a) {
  return std::make_unique<RandomVerticalFlip>(a);
}
std::unique_ptr<PixelOp> make_random_rotation(OpArgs& a) { return std::make_unique<RandomRotation>(a); }
std::unique_ptr<PixelOp> make_random_affine(OpArgs& a) { return std::make_unique<RandomAffine>(a); }

}  // namespace forkfeed
