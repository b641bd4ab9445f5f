// The ops of a pipeline, one class each, and make_op(): the one table of what exists,
// what each takes and at which stage it runs.
#include "transforms/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "transforms/augment.h"
#include "transforms/crop.h"
#include "transforms/functional.h"
#include "transforms/op_args.h"

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

Result<GeometryStep> Op::step(int width, int height, KeyedRng&) const {
  return GeometryStep{0, 0, width, height, width, height};
}
void Op::run(cv::Mat&, KeyedRng&, fn::Moves*) {}
void Op::run(TensorSample&, KeyedRng&) {}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// torchvision draws every random parameter in float32 (torch.empty(1).uniform_(lo, hi)),
// and torch refuses a range whose ends float32 cannot hold, or wider than its largest
// number: such an op fails at torchvision's first sample ("from is out of bounds for
// float"); here it is refused when the pipeline is read, with the allowed range.
constexpr double kFloatMax = std::numeric_limits<float>::max();
// And a parameter that must be positive (a blur's sigma, an affine scale) must stay so in
// float32: torch draws 1e-300 as 0 and raises at the first sample ("should be positive");
// accepted, it gave all-black samples. Its smallest normal number is the least taken.
constexpr double kFloatMin = std::numeric_limits<float>::min();
using fn::Interpolation;

// A range to draw from, checked as torch checks it (its ends are in [-kFloatMax, kFloatMax]).
std::array<double, 2> drawn(OpArgs& a, std::string_view name, std::array<double, 2> range) {
  if (range[1] - range[0] > kFloatMax) {
    a.fail(name,
           "spans more than 3.4e38, the largest float32: torchvision draws from it in float32 and refuses "
           "a wider range");
  }
  return range;
}

// torch.rand(1) < p.
bool draw(KeyedRng& rng, double p) { return rng.uniform(0.0, 1.0) < p; }

std::string size_text(std::array<int, 2> hw) { return std::to_string(hw[1]) + "x" + std::to_string(hw[0]); }

Status too_small(const char* op, int width, int height, std::array<int, 2> crop, const char* also = "") {
  return Status::BadData(std::string(op) + "(" + size_text(crop) +
                         ") needs an image at least that large; this one is " + std::to_string(width) + "x" +
                         std::to_string(height) + " (after the ops before it): resize first, e.g. Resize(" +
                         std::to_string(std::max(crop[0], crop[1])) + ")" + also);
}

// ---- geometry ---------------------------------------------------------------------

class Resize : public Op {
 public:
  explicit Resize(OpArgs& a) : Op(Stage::kGeometry) {
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

class CenterCrop : public Op {
 public:
  explicit CenterCrop(OpArgs& a) : Op(Stage::kGeometry) {
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

// Reads padding_mode, torchvision's: an op that `pads` takes "constant" (its fill) only.
void constant_padding(OpArgs& a, bool pads) {
  const std::string mode = a.word("padding_mode", "constant", {"constant", "edge", "reflect", "symmetric"});
  if (mode != "constant" && pads) {
    a.fail("padding_mode",
           "'" + mode + "' is not supported: forkfeed pads with fill (padding_mode='constant')");
  }
}

// RandomCrop(size, padding, pad_if_needed, fill, padding_mode) as torchvision's forward():
// pad by `padding` (left, top, right, bottom), then with pad_if_needed pad each side the
// image still lacks by the whole lack (both ends), then get_params on the padded image. The
// step is the crop in the unpadded image's pixels: the padding is what it takes from past
// the edges (GeometryStep::fill).
class RandomCrop : public Op {
 public:
  explicit RandomCrop(OpArgs& a) : Op(Stage::kGeometry) {
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

// v2.RandomResize(min_size, max_size): the shorter side becomes an integer drawn in
// [min_size, max_size) (torch.randint's, max excluded), the longer scaled as Resize(int) does.
class RandomResize : public Op {
 public:
  explicit RandomResize(OpArgs& a) : Op(Stage::kGeometry) {
    a.require("min_size");
    a.require("max_size");
    min_ = a.integer("min_size", 1, 1, 65536);
    max_ = a.integer("max_size", 2, 1, 65537);
    if (max_ <= min_)
      a.fail("max_size", "must be larger than min_size: the size is drawn in [min_size, max_size)");
    a.interpolation("interpolation", Interpolation::kBilinear, {Interpolation::kBilinear});
    a.flag("antialias", true);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    const int shorter = min_ + static_cast<int>(rng.below(static_cast<std::uint64_t>(max_ - min_)));
    const auto [w, h] = resized_size(width, height, shorter);
    return GeometryStep{0, 0, width, height, w, h};
  }
  bool resamples() const override { return true; }
  std::array<int, 2> shape(std::array<int, 2>) const override { return {-1, -1}; }
  std::array<int, 2> least_shape() const override { return {min_, min_}; }

 private:
  int min_ = 1, max_ = 2;
};

// torchvision's ranges: a pair with min <= max.
std::array<double, 2> pair_of(OpArgs& a, std::string_view name, std::array<double, 2> fallback, double lo,
                              double hi) {
  const auto v = a.numbers(name, 2, 2, lo, hi);
  if (!v) return fallback;
  if (v->size() != 2 || (*v)[0] > (*v)[1]) {
    a.fail(name, "must be a tuple (min, max) with min <= max");
    return fallback;
  }
  return {(*v)[0], (*v)[1]};
}

// v2.RandomZoomOut(fill, side_range, p): with probability p, the image on a canvas r times
// its size (r drawn in side_range), at a random place, the rest `fill` — a crop reaching
// past every edge. Its draws in float32, as torch makes them.
class RandomZoomOut : public Op {
 public:
  explicit RandomZoomOut(OpArgs& a) : Op(Stage::kGeometry) {
    fill_ = a.fill("fill");
    side_ = pair_of(a, "side_range", {1.0, 4.0}, 1.0, 65536.0);
    p_ = a.number("p", 0.5, 0, 1);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    if (!draw(rng, p_)) return Op::step(width, height, rng);
    const float r =
        static_cast<float>(side_[0]) + uniform_float(rng) * static_cast<float>(side_[1] - side_[0]);
    const int canvas_width = static_cast<int>(static_cast<float>(width) * r);
    const int canvas_height = static_cast<int>(static_cast<float>(height) * r);
    const float u0 = uniform_float(rng), u1 = uniform_float(rng);
    const int left = static_cast<int>(static_cast<float>(canvas_width - width) * u0);
    const int top = static_cast<int>(static_cast<float>(canvas_height - height) * u1);
    return GeometryStep{-left, -top, canvas_width, canvas_height, canvas_width, canvas_height, fill_};
  }
  std::array<int, 2> shape(std::array<int, 2>) const override { return {-1, -1}; }
  bool pads() const override { return true; }

 private:
  static float uniform_float(KeyedRng& rng) { return static_cast<float>(rng.uniform(0.0, 1.0)); }
  fn::Fill fill_{};
  std::array<double, 2> side_{};
  double p_ = 0.5;
};

// A resize to out_width x out_height a drawn scale made; bad data when it leaves no pixel.
Result<GeometryStep> scaled(const char* op, int width, int height, int out_width, int out_height) {
  if (out_width < 1 || out_height < 1) {
    return Status::BadData(std::string(op) + " scales this " + std::to_string(width) + "x" +
                           std::to_string(height) + " image to " + std::to_string(out_width) + "x" +
                           std::to_string(out_height) + ", no pixel: raise its smallest scale");
  }
  return GeometryStep{0, 0, width, height, out_width, out_height};
}

// v2.ScaleJitter(target_size, scale_range): resized by min(target_h / h, target_w / w) times a
// scale drawn in scale_range (the large-scale jitter of the detection reference's "lsj").
class ScaleJitter : public Op {
 public:
  explicit ScaleJitter(OpArgs& a) : Op(Stage::kGeometry) {
    a.require("target_size");
    target_ = a.size("target_size").value_or(std::array<int, 2>{1, 1});
    scale_ = pair_of(a, "scale_range", {0.1, 2.0}, kFloatMin, 65536.0);
    a.interpolation("interpolation", Interpolation::kBilinear, {Interpolation::kBilinear});
    a.flag("antialias", true);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    // torch's float32: scale_range[0] + rand(1) * (scale_range[1] - scale_range[0]), times a Python float.
    const float scale = static_cast<float>(scale_[0]) +
                        static_cast<float>(rng.uniform(0.0, 1.0)) * static_cast<float>(scale_[1] - scale_[0]);
    // v2 divides target_size[1] by the height and target_size[0] by the width.
    const double fit =
        std::min(static_cast<double>(target_[1]) / height, static_cast<double>(target_[0]) / width);
    const float r = static_cast<float>(fit) * scale;
    return scaled("ScaleJitter", width, height, static_cast<int>(static_cast<float>(width) * r),
                  static_cast<int>(static_cast<float>(height) * r));
  }
  bool resamples() const override { return true; }
  std::array<int, 2> shape(std::array<int, 2>) const override { return {-1, -1}; }

 private:
  std::array<int, 2> target_{};
  std::array<double, 2> scale_{};
};

// v2.RandomShortestSize(min_size, max_size): the shorter side resized to one of min_size
// (drawn), the longer kept under max_size; Python's float arithmetic.
class RandomShortestSize : public Op {
 public:
  explicit RandomShortestSize(OpArgs& a) : Op(Stage::kGeometry) {
    a.require("min_size");
    const auto sizes = a.numbers("min_size", 1, 64, 1, 65536);
    for (double s : sizes.value_or(std::vector<double>{1})) {
      if (s != std::floor(s)) a.fail("min_size", "must be whole pixels");
      sizes_.push_back(static_cast<int>(s));
    }
    max_size_ = a.integer("max_size", 0, 1, 65536);
    a.interpolation("interpolation", Interpolation::kBilinear, {Interpolation::kBilinear});
    a.flag("antialias", true);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    const int shortest = sizes_[rng.below(sizes_.size())];
    double r = static_cast<double>(shortest) / std::min(width, height);
    if (max_size_ > 0) r = std::min(r, static_cast<double>(max_size_) / std::max(width, height));
    return scaled("RandomShortestSize", width, height, static_cast<int>(width * r),
                  static_cast<int>(height * r));
  }
  bool resamples() const override { return true; }
  std::array<int, 2> shape(std::array<int, 2>) const override { return {-1, -1}; }

 private:
  std::vector<int> sizes_;
  int max_size_ = 0;
};

// v2.FixedSizeCrop(size, fill): a crop of at most `size` at a random place (one draw for
// both offsets), padded at the bottom and right to `size` with fill.
class FixedSizeCrop : public Op {
 public:
  explicit FixedSizeCrop(OpArgs& a) : Op(Stage::kGeometry) {
    a.require("size");
    size_ = a.size("size").value_or(std::array<int, 2>{1, 1});
    fill_ = a.fill("fill");
    constant_padding(a, true);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    const auto [h, w] = size_;
    const float r = static_cast<float>(rng.uniform(0.0, 1.0));
    const int top = static_cast<int>(static_cast<float>(std::max(height - h, 0)) * r);
    const int left = static_cast<int>(static_cast<float>(std::max(width - w, 0)) * r);
    return GeometryStep{left, top, w, h, w, h, fill_};
  }
  std::array<int, 2> shape(std::array<int, 2>) const override { return size_; }
  std::array<int, 2> least_shape() const override { return size_; }
  bool pads() const override { return true; }

 private:
  std::array<int, 2> size_{};
  fn::Fill fill_{};
};

// torchvision.ops.box_iou of two XYXY boxes, in float32.
float box_iou(const Box& a, const Box& b) {
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  const float w = std::max(std::min(a[2], b[2]) - std::max(a[0], b[0]), 0.0f);
  const float h = std::max(std::min(a[3], b[3]) - std::max(a[1], b[1]), 0.0f);
  const float inter = w * h;
  return inter / (area_a + area_b - inter);
}

// v2.RandomIoUCrop (SSD's): draws a minimum overlap among sampler_options (1 or more: the
// image as it is), then up to `trials` crops of min_scale..max_scale of each side, of an
// aspect in [min_aspect_ratio, max_aspect_ratio], keeping the first that holds the centre of
// a box and overlaps one of those by the minimum; the boxes whose centre it leaves out are
// dropped (GeometryStep::centred_boxes_only). v2 draws again until one is found; here a
// sample with no box centred inside the image, which no crop can hold, stays as it is at
// once, and so does one after kMostCrops crops tried (v2 would draw forever: a sample
// without boxes under options without 1, or trials=100000 and overlaps no crop reaches).
class RandomIoUCrop : public Op {
 public:
  static constexpr int kMostCrops = 100'000;
  explicit RandomIoUCrop(OpArgs& a) : Op(Stage::kGeometry) {
    min_scale_ = a.number("min_scale", 0.3, kFloatMin, 1.0);
    max_scale_ = a.number("max_scale", 1.0, kFloatMin, 1.0);
    if (min_scale_ > max_scale_) a.fail("max_scale", "must be at least min_scale");
    min_aspect_ = a.number("min_aspect_ratio", 0.5, 0, kFloatMax);
    max_aspect_ = a.number("max_aspect_ratio", 2.0, 0, kFloatMax);
    if (min_aspect_ > max_aspect_) a.fail("max_aspect_ratio", "must be at least min_aspect_ratio");
    options_ = a.numbers("sampler_options", 1, 64, 0, kFloatMax)
                   .value_or(std::vector<double>{0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0});
    trials_ = a.integer("trials", 40, 1, 100000);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    return step_among(width, height, rng, {});
  }
  Result<GeometryStep> step_among(int width, int height, KeyedRng& rng,
                                  std::span<const Box> boxes) const override {
    const auto uniform = [&rng] { return static_cast<float>(rng.uniform(0.0, 1.0)); };
    const auto scale = [&](float u) {
      return static_cast<float>(min_scale_) + static_cast<float>(max_scale_ - min_scale_) * u;
    };
    const auto inside = [&](const Box& b) {
      const float cx = 0.5f * (b[0] + b[2]), cy = 0.5f * (b[1] + b[3]);
      return 0.0f < cx && cx < static_cast<float>(width) && 0.0f < cy && cy < static_cast<float>(height);
    };
    if (std::none_of(boxes.begin(), boxes.end(), inside)) return Op::step(width, height, rng);
    for (int tried = 0; tried < kMostCrops;) {
      const auto least_overlap = static_cast<float>(options_[rng.below(options_.size())]);
      if (least_overlap >= 1.0f) break;
      for (int t = 0; t < trials_ && tried < kMostCrops; ++t, ++tried) {
        const float r0 = scale(uniform()), r1 = scale(uniform());
        const int w = static_cast<int>(static_cast<float>(width) * r0);
        const int h = static_cast<int>(static_cast<float>(height) * r1);
        const double aspect = h == 0 ? -1.0 : static_cast<double>(w) / h;  // torchvision divides by 0
        if (!(min_aspect_ <= aspect && aspect <= max_aspect_)) continue;
        const float u0 = uniform(), u1 = uniform();
        const int left = static_cast<int>(static_cast<float>(width - w) * u0);
        const int top = static_cast<int>(static_cast<float>(height - h) * u1);
        if (w == 0 || h == 0) continue;
        const Box crop{static_cast<float>(left), static_cast<float>(top), static_cast<float>(left + w),
                       static_cast<float>(top + h)};
        bool centred = false;
        float best = 0.0f;
        for (const Box& b : boxes) {
          const float cx = 0.5f * (b[0] + b[2]), cy = 0.5f * (b[1] + b[3]);
          if (!(crop[0] < cx && cx < crop[2] && crop[1] < cy && cy < crop[3])) continue;
          const float iou = box_iou(b, crop);
          best = centred ? std::max(best, iou) : iou;
          centred = true;
        }
        if (!centred || best < least_overlap) continue;
        GeometryStep step{left, top, w, h, w, h};
        step.centred_boxes_only = true;
        return step;
      }
    }
    return Op::step(width, height, rng);
  }
  bool needs_boxes() const override { return true; }
  std::array<int, 2> shape(std::array<int, 2>) const override { return {-1, -1}; }

 private:
  double min_scale_ = 0.3, max_scale_ = 1.0, min_aspect_ = 0.5, max_aspect_ = 2.0;
  std::vector<double> options_;
  int trials_ = 40;
};

class RandomResizedCrop : public Op {
 public:
  explicit RandomResizedCrop(OpArgs& a) : Op(Stage::kGeometry) {
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

// ---- pixels -----------------------------------------------------------------------

// An op applied with probability p (torchvision's Random* wrappers of one function).
class Sometimes : public Op {
 public:
  Sometimes(OpArgs& a, double default_p, std::function<void(cv::Mat&)> apply, bool commutes)
      : Op(Stage::kPixels), apply_(std::move(apply)), commutes_(commutes) {
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

class RandomHorizontalFlip : public Op {
 public:
  explicit RandomHorizontalFlip(OpArgs& a) : Op(Stage::kPixels) { p_ = a.number("p", 0.5, 0, 1); }
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

class RandomVerticalFlip : public Op {
 public:
  explicit RandomVerticalFlip(OpArgs& a) : Op(Stage::kPixels) { p_ = a.number("p", 0.5, 0, 1); }
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

class ColorJitter : public Op {
 public:
  explicit ColorJitter(OpArgs& a) : Op(Stage::kPixels) {
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
class RandomPhotometricDistort : public Op {
 public:
  explicit RandomPhotometricDistort(OpArgs& a) : Op(Stage::kPixels) {
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

class Grayscale : public Op {
 public:
  explicit Grayscale(OpArgs& a) : Op(Stage::kPixels) {
    if (a.integer("num_output_channels", 1, 1, 3) != 3) {
      a.fail("num_output_channels", "must be 3: batches have three channels (write Grayscale(3))");
    }
  }
  void run(cv::Mat& sample, KeyedRng&, fn::Moves*) override { fn::rgb_to_grayscale(sample); }
  bool commutes_with_mirror() const override { return true; }
};

class GaussianBlur : public Op {
 public:
  explicit GaussianBlur(OpArgs& a) : Op(Stage::kPixels) {
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

class RandomRotation : public Op {
 public:
  explicit RandomRotation(OpArgs& a) : Op(Stage::kPixels) {
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

class RandomAffine : public Op {
 public:
  explicit RandomAffine(OpArgs& a) : Op(Stage::kPixels) {
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

// The AutoAugment family: a policy struct of transforms/augment.h, run per sample.
template <typename Policy>
class Augment : public Op {
 public:
  explicit Augment(Policy policy) : Op(Stage::kPixels), policy_(policy) {}
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) override {
    if constexpr (std::is_same_v<Policy, augment::AugMix>) {
      policy_.run(sample, rng);
    } else {
      policy_.run(sample, rng, drawn_, moves);
    }
  }
  bool repeatable() const override { return !std::is_same_v<Policy, augment::AugMix>; }

 private:
  Policy policy_;
  std::vector<augment::DrawnOp> drawn_;  // reused across samples
};

template <typename Policy>
void read_common(OpArgs& a, Policy& p) {
  p.interpolation =
      a.interpolation("interpolation", p.interpolation, {Interpolation::kNearest, Interpolation::kBilinear});
  p.fill = a.fill("fill");
}

std::unique_ptr<Op> auto_augment(OpArgs& a) {
  augment::AutoAugment p;
  a.word("policy", "imagenet", {"imagenet"});
  read_common(a, p);
  return std::make_unique<Augment<augment::AutoAugment>>(p);
}

std::unique_ptr<Op> rand_augment(OpArgs& a) {
  augment::RandAugment p;
  p.num_ops = a.integer("num_ops", 2, 0, 16);
  p.num_magnitude_bins = a.integer("num_magnitude_bins", 31, 2, 1000);
  p.magnitude = a.integer("magnitude", 9, 0, p.num_magnitude_bins - 1);
  read_common(a, p);
  return std::make_unique<Augment<augment::RandAugment>>(p);
}

std::unique_ptr<Op> trivial_augment_wide(OpArgs& a) {
  augment::TrivialAugmentWide p;
  p.num_magnitude_bins = a.integer("num_magnitude_bins", 31, 2, 1000);
  read_common(a, p);
  return std::make_unique<Augment<augment::TrivialAugmentWide>>(p);
}

std::unique_ptr<Op> aug_mix(OpArgs& a) {
  augment::AugMix p;
  p.severity = a.integer("severity", 3, 1, 10);
  p.mixture_width = a.integer("mixture_width", 3, 1, 16);
  p.chain_depth = a.integer("chain_depth", -1, -1, 16);
  if (p.chain_depth == 0) a.fail("chain_depth", "must be -1 (1 to 3 ops, drawn) or at least 1");
  p.alpha = a.number("alpha", 1.0, 0, kFloatMax);
  if (p.alpha <= 0) a.fail("alpha", "must be positive");
  p.all_ops = a.flag("all_ops", true);
  read_common(a, p);
  return std::make_unique<Augment<augment::AugMix>>(p);
}

// ---- normalize and tensor ops -----------------------------------------------------

class Normalize : public Op {
 public:
  Normalize(OpArgs& a, const OpDefaults& defaults) : Op(Stage::kNormalize), values_(defaults) {
    read(a, "mean", values_.mean, -kInf);
    read(a, "std", values_.std, 0);
    if (Status s = check_normalisation(values_.mean, values_.std); !s.ok())
      a.fail("mean/std", "are out of range: " + s.message());
    a.flag("inplace", false);
  }
  const OpDefaults* normalisation() const override { return &values_; }

 private:
  static void read(OpArgs& a, std::string_view name, std::array<float, 3>& out, double lo) {
    const auto v = a.numbers(name, 1, 3, lo, kInf);
    if (!v) return;
    if (v->size() == 2) a.fail(name, "must be one number or three (R, G, B)");
    for (int c = 0; c < 3; ++c) out[c] = static_cast<float>((*v)[v->size() == 3 ? c : 0]);
  }
  OpDefaults values_;
};

class RandomErasing : public Op {
 public:
  explicit RandomErasing(OpArgs& a) : Op(Stage::kTensor) {
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

// ---- the table --------------------------------------------------------------------

using Make = std::function<std::unique_ptr<Op>(OpArgs&, const OpDefaults&)>;

struct OpEntry {
  std::string_view name;
  std::vector<std::string_view> params;
  Make make;
};

template <typename T>
Make plain() {
  return [](OpArgs& a, const OpDefaults&) { return std::make_unique<T>(a); };
}

Make sometimes(double default_p, std::function<void(cv::Mat&)> apply, bool commutes = true) {
  return [=](OpArgs& a, const OpDefaults&) {
    return std::make_unique<Sometimes>(a, default_p, apply, commutes);
  };
}

const std::vector<OpEntry>& table() {
  static const std::vector<OpEntry> ops = {
      {"Resize", {"size", "interpolation", "max_size", "antialias"}, plain<Resize>()},
      {"CenterCrop", {"size"}, plain<CenterCrop>()},
      {"RandomCrop", {"size", "padding", "pad_if_needed", "fill", "padding_mode"}, plain<RandomCrop>()},
      {"RandomResize", {"min_size", "max_size", "interpolation", "antialias"}, plain<RandomResize>()},
      {"RandomZoomOut", {"fill", "side_range", "p"}, plain<RandomZoomOut>()},
      {"ScaleJitter", {"target_size", "scale_range", "interpolation", "antialias"}, plain<ScaleJitter>()},
      {"RandomShortestSize",
       {"min_size", "max_size", "interpolation", "antialias"},
       plain<RandomShortestSize>()},
      {"FixedSizeCrop", {"size", "fill", "padding_mode"}, plain<FixedSizeCrop>()},
      {"RandomIoUCrop",
       {"min_scale", "max_scale", "min_aspect_ratio", "max_aspect_ratio", "sampler_options", "trials"},
       plain<RandomIoUCrop>()},
      {"RandomResizedCrop",
       {"size", "scale", "ratio", "interpolation", "antialias"},
       plain<RandomResizedCrop>()},
      {"RandomHorizontalFlip", {"p"}, plain<RandomHorizontalFlip>()},
      {"RandomVerticalFlip", {"p"}, plain<RandomVerticalFlip>()},
      {"ColorJitter", {"brightness", "contrast", "saturation", "hue"}, plain<ColorJitter>()},
      {"RandomPhotometricDistort",
       {"brightness", "contrast", "saturation", "hue", "p"},
       plain<RandomPhotometricDistort>()},
      {"Grayscale", {"num_output_channels"}, plain<Grayscale>()},
      {"RandomGrayscale", {"p"}, sometimes(0.1, fn::rgb_to_grayscale)},
      {"GaussianBlur", {"kernel_size", "sigma"}, plain<GaussianBlur>()},
      {"RandomRotation", {"degrees", "interpolation", "expand", "center", "fill"}, plain<RandomRotation>()},
      {"RandomAffine",
       {"degrees", "translate", "scale", "shear", "interpolation", "fill", "center"},
       plain<RandomAffine>()},
      {"RandomPosterize",
       {"bits", "p"},
       [](OpArgs& a, const OpDefaults&) -> std::unique_ptr<Op> {
         a.require("bits");
         const int bits = a.integer("bits", 8, 0, 8);
         return std::make_unique<Sometimes>(
             a, 0.5, [bits](cv::Mat& m) { fn::posterize(m, bits); }, true);
       }},
      {"RandomSolarize",
       {"threshold", "p"},
       [](OpArgs& a, const OpDefaults&) -> std::unique_ptr<Op> {
         a.require("threshold");
         const double threshold = a.number("threshold", 256, 0, 256);
         return std::make_unique<Sometimes>(
             a, 0.5, [threshold](cv::Mat& m) { fn::solarize(m, threshold); }, true);
       }},
      {"RandomAdjustSharpness",
       {"sharpness_factor", "p"},
       [](OpArgs& a, const OpDefaults&) -> std::unique_ptr<Op> {
         a.require("sharpness_factor");
         const double factor = a.number("sharpness_factor", 1, 0, kInf);
         return std::make_unique<Sometimes>(
             a, 0.5, [factor](cv::Mat& m) { fn::adjust_sharpness(m, factor); }, true);
       }},
      {"RandomAutocontrast", {"p"}, sometimes(0.5, fn::autocontrast)},
      {"RandomEqualize", {"p"}, sometimes(0.5, fn::equalize)},
      {"RandomInvert", {"p"}, sometimes(0.5, fn::invert)},
      {"AutoAugment",
       {"policy", "interpolation", "fill"},
       [](OpArgs& a, const OpDefaults&) { return auto_augment(a); }},
      {"RandAugment",
       {"num_ops", "magnitude", "num_magnitude_bins", "interpolation", "fill"},
       [](OpArgs& a, const OpDefaults&) { return rand_augment(a); }},
      {"TrivialAugmentWide",
       {"num_magnitude_bins", "interpolation", "fill"},
       [](OpArgs& a, const OpDefaults&) { return trivial_augment_wide(a); }},
      {"AugMix",
       {"severity", "mixture_width", "chain_depth", "alpha", "all_ops", "interpolation", "fill"},
       [](OpArgs& a, const OpDefaults&) { return aug_mix(a); }},
      {"Normalize",
       {"mean", "std", "inplace"},
       [](OpArgs& a, const OpDefaults& d) { return std::make_unique<Normalize>(a, d); }},
      {"RandomErasing", {"p", "scale", "ratio", "value", "inplace"}, plain<RandomErasing>()},
  };
  return ops;
}

}  // namespace

Result<std::unique_ptr<Op>> make_op(const OpCall& call, const OpDefaults& defaults) {
  for (const OpEntry& e : table()) {
    if (e.name != call.name) continue;
    OpArgs args(call, e.params);
    if (!args.status().ok()) return args.status();
    std::unique_ptr<Op> op = e.make(args, defaults);
    if (!args.status().ok()) return args.status();
    return op;
  }
  std::string names;
  for (const OpEntry& e : table()) names.append(names.empty() ? "" : ", ").append(e.name);
  return Status::InvalidArgument("transform: unknown op '" + call.name + "' in " + call.text +
                                 " (forkfeed has: " + names + "; or the shorthands train and eval)");
}

}  // namespace forkfeed
