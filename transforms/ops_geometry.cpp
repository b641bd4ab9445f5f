// The geometry ops of torchvision.transforms: Resize, CenterCrop, RandomCrop and
// RandomResizedCrop, each the crop and the size it makes of an image (transforms/ops.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "transforms/crop.h"
#include "transforms/op_draws.h"
#include "transforms/op_factories.h"

namespace forkfeed {
namespace {

using fn::Interpolation;

std::string size_text(std::array<int, 2> hw) { return std::to_string(hw[1]) + "x" + std::to_string(hw[0]); }

Status too_small(const char* op, int width, int height, std::array<int, 2> crop, const char* also = "") {
  return Status::BadData(std::string(op) + "(" + size_text(crop) +
                         ") needs an image at least that large; this one is " + std::to_string(width) + "x" +
                         std::to_string(height) + " (after the ops before it): resize first, e.g. Resize(" +
                         std::to_string(std::max(crop[0], crop[1])) + ")" + also);
}

class Resize : public GeometryOp {
 public:
  explicit Resize(OpArgs& a) {
    a.require("size");
    if (a.is_float("size")) {
      a.fail("size",
             "must be an int or a sequence, as torchvision's Resize takes it (it refuses a float such as "
             "100.0 or 1e2: write 100)");
    }
    size_ = a.size("size").value_or(std::array<int, 2>{1, 1});
    tuple_ = a.given("size") && a.numbers("size", 1, 2, 1, 65536).value_or(std::vector<double>{}).size() == 2;
    a.interpolation("interpolation", Interpolation::kBilinear, {Interpolation::kBilinear});
    max_size_ = a.integer("max_size", 0, 1, 65536);
    a.flag("antialias", true);
    if (tuple_ && max_size_ > 0) a.fail("max_size", "is only allowed with a single size (as in torchvision)");
    if (!tuple_ && max_size_ > 0 && max_size_ <= size_[0])
      a.fail("max_size", "must be larger than size (as in torchvision)");
  }
  Result<GeometryStep> step(int width, int height, KeyedRng&) const override {
    const auto [w, h] = output(width, height);
    return GeometryStep{0, 0, width, height, w, h};
  }
  bool resamples() const override { return true; }
  std::array<int, 2> least_shape() const override {
    if (tuple_) return size_;
    // The shorter side becomes size, the longer at least that; max_size may shorten both.
    return max_size_ > 0 ? std::array<int, 2>{0, 0} : std::array<int, 2>{size_[0], size_[0]};
  }
  std::array<int, 2> shape(std::array<int, 2> in) const override {
    if (tuple_) return size_;
    if (in[0] < 0) return in;
    const auto [w, h] = output(in[1], in[0]);
    return {h, w};
  }

 private:
  std::array<int, 2> output(int width, int height) const {
    if (tuple_) return {size_[1], size_[0]};
    std::array<int, 2> wh = resized_size(width, height, size_[0]);
    const int longer = std::max(wh[0], wh[1]);
    if (max_size_ > 0 && longer > max_size_) {
      const int shorter =
          static_cast<int>(static_cast<std::int64_t>(max_size_) * std::min(wh[0], wh[1]) / longer);
      wh = wh[0] >= wh[1] ? std::array<int, 2>{max_size_, shorter} : std::array<int, 2>{shorter, max_size_};
    }
    return wh;
  }
  std::array<int, 2> size_{};
  bool tuple_ = false;
  int max_size_ = 0;
};

class CenterCrop : public GeometryOp {
 public:
  explicit CenterCrop(OpArgs& a) {
    a.require("size");
    size_ = a.size("size").value_or(std::array<int, 2>{1, 1});
  }
  // F.center_crop: a side the image lacks is padded with 0, (crop - side) // 2 before it
  // and the rest after, and that side is then all of the crop.
  Result<GeometryStep> step(int width, int height, KeyedRng&) const override {
    const auto [h, w] = size_;
    const int x = w > width ? -((w - width) / 2) : center_crop_offset(width, w);
    const int y = h > height ? -((h - height) / 2) : center_crop_offset(height, h);
    return GeometryStep{x, y, w, h, w, h};
  }
  std::array<int, 2> shape(std::array<int, 2>) const override { return size_; }
  std::array<int, 2> least_shape() const override { return size_; }
  bool pads() const override { return true; }

 private:
  std::array<int, 2> size_{};
};

// RandomCrop(size, padding, pad_if_needed, fill, padding_mode) as torchvision's forward():
// pad by `padding` (left, top, right, bottom), then with pad_if_needed pad each side the
// image still lacks by the whole lack (both ends), then get_params on the padded image. The
// step is the crop in the unpadded image's pixels: the padding is what it takes from past
// the edges (GeometryStep::fill).
class RandomCrop : public GeometryOp {
 public:
  explicit RandomCrop(OpArgs& a) {
    a.require("size");
    size_ = a.size("size").value_or(std::array<int, 2>{1, 1});
    if (const auto p = a.numbers("padding", 1, 4, 0, 65536)) {
      const std::vector<double>& v = *p;
      if (v.size() == 3)
        a.fail("padding", "must be one number or a sequence of 1, 2 or 4 (as in torchvision)");
      const auto at = [&v](std::size_t i) { return static_cast<int>(v[i % v.size()]); };
      // (all), (left/right, top/bottom), (left, top, right, bottom)
      padding_ = v.size() == 4 ? std::array<int, 4>{at(0), at(1), at(2), at(3)}
                               : std::array<int, 4>{at(0), at(1), at(0), at(1)};
      if (std::any_of(v.begin(), v.end(), [](double n) { return n != std::floor(n); }))
        a.fail("padding", "must be whole pixels");
    }
    pad_if_needed_ = a.flag("pad_if_needed", false);
    fill_ = a.fill("fill");
    constant_padding(a, pads());
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    const auto [h, w] = size_;
    auto [left, top, right, bottom] = padding_;
    if (pad_if_needed_ && width + left + right < w) {
      const int lack = w - (width + left + right);
      left += lack;
      right += lack;
    }
    if (pad_if_needed_ && height + top + bottom < h) {
      const int lack = h - (height + top + bottom);
      top += lack;
      bottom += lack;
    }
    const int padded_width = width + left + right, padded_height = height + top + bottom;
    if ((w > padded_width || h > padded_height) && !pads()) {
      return too_small("RandomCrop", width, height, size_, ", or pad it with pad_if_needed=True");
    }
    if (w > padded_width || h > padded_height) {
      return Status::BadData(
          "RandomCrop(" + size_text(size_) + ") needs an image at least that large; this one is " +
          std::to_string(width) + "x" + std::to_string(height) + " (after the ops before it), " +
          std::to_string(padded_width) + "x" + std::to_string(padded_height) +
          " with its padding: pad it with pad_if_needed=True, " + "or pad the side it lacks");
    }
    int x = 0, y = 0;
    if (w != padded_width || h != padded_height) {
      y = static_cast<int>(rng.below(static_cast<std::uint64_t>(padded_height - h + 1)));
      x = static_cast<int>(rng.below(static_cast<std::uint64_t>(padded_width - w + 1)));
    }
    return GeometryStep{x - left, y - top, w, h, w, h, fill_};
  }
  std::array<int, 2> shape(std::array<int, 2>) const override { return size_; }
  std::array<int, 2> least_shape() const override { return size_; }
  bool pads() const override { return pad_if_needed_ || padding_ != std::array<int, 4>{}; }

 private:
  std::array<int, 2> size_{};
  std::array<int, 4> padding_{};  // left, top, right, bottom
  bool pad_if_needed_ = false;
  fn::Fill fill_{};
};

class RandomResizedCrop : public GeometryOp {
 public:
  explicit RandomResizedCrop(OpArgs& a) {
    a.require("size");
    size_ = a.size("size").value_or(std::array<int, 2>{1, 1});
    scale_ = pair_of(a, "scale", {0.08, 1.0}, 0, kFloatMax);
    ratio_ = pair_of(a, "ratio", {3.0 / 4.0, 4.0 / 3.0}, 1e-6, kFloatMax);
    if (scale_[1] <= 0) a.fail("scale", "must include a positive area");
    a.interpolation("interpolation", Interpolation::kBilinear, {Interpolation::kBilinear});
    a.flag("antialias", true);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    const CropBox b = random_resized_crop(width, height, rng, scale_, ratio_);
    return GeometryStep{b.x, b.y, b.width, b.height, size_[1], size_[0]};
  }
  bool resamples() const override { return true; }
  std::array<int, 2> shape(std::array<int, 2>) const override { return size_; }
  std::array<int, 2> least_shape() const override { return size_; }

 private:
  std::array<int, 2> size_{};
  std::array<double, 2> scale_{}, ratio_{};
};

}  // namespace

std::unique_ptr<GeometryOp> make_resize(OpArgs& a) { return std::make_unique<Resize>(a); }
std::unique_ptr<GeometryOp> make_center_crop(OpArgs& a) { return std::make_unique<CenterCrop>(a); }
std::unique_ptr<GeometryOp> make_random_crop(OpArgs& a) { return std::make_unique<RandomCrop>(a); }
std::unique_ptr<GeometryOp> make_random_resized_crop(OpArgs& a) {
  return std::make_unique<RandomResizedCrop>(a);
}

}  // namespace forkfeed
