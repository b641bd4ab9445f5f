// The geometry ops that only torchvision.transforms.v2 has, those of its detection and
// segmentation references: RandomResize, RandomZoomOut, ScaleJitter, RandomShortestSize,
// FixedSizeCrop and RandomIoUCrop (transforms/ops.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "transforms/crop.h"
#include "transforms/op_draws.h"
#include "transforms/op_factories.h"

namespace forkfeed {
namespace {

using fn::Interpolation;

// v2.RandomResize(min_size, max_size): the shorter side becomes an integer drawn in
// [min_size, max_size) (torch.randint's, max excluded), the longer scaled as Resize(int) does.
class RandomResize : public GeometryOp {
 public:
  explicit RandomResize(OpArgs& a) {
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

// v2.RandomZoomOut(fill, side_range, p): with probability p, the image on a canvas r times
// its size (r drawn in side_range), at a random place, the rest `fill` — a crop reaching
// past every edge. Its draws in float32, as torch makes them.
class RandomZoomOut : public GeometryOp {
 public:
  explicit RandomZoomOut(OpArgs& a) {
    fill_ = a.fill("fill");
    side_ = pair_of(a, "side_range", {1.0, 4.0}, 1.0, 65536.0);
    p_ = a.number("p", 0.5, 0, 1);
  }
  Result<GeometryStep> step(int width, int height, KeyedRng& rng) const override {
    if (!draw(rng, p_)) return whole(width, height);
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
class ScaleJitter : public GeometryOp {
 public:
  explicit ScaleJitter(OpArgs& a) {
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
class RandomShortestSize : public GeometryOp {
 public:
  explicit RandomShortestSize(OpArgs& a) {
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
class FixedSizeCrop : public GeometryOp {
 public:
  explicit FixedSizeCrop(OpArgs& a) {
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
class RandomIoUCrop : public GeometryOp {
 public:
  static constexpr int kMostCrops = 100'000;
  explicit RandomIoUCrop(OpArgs& a) {
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
    if (std::none_of(boxes.begin(), boxes.end(), inside)) return whole(width, height);
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
    return whole(width, height);
  }
  bool needs_boxes() const override { return true; }
  std::array<int, 2> shape(std::array<int, 2>) const override { return {-1, -1}; }

 private:
  double min_scale_ = 0.3, max_scale_ = 1.0, min_aspect_ = 0.5, max_aspect_ = 2.0;
  std::vector<double> options_;
  int trials_ = 40;
};

}  // namespace

std::unique_ptr<GeometryOp> make_random_resize(OpArgs& a) { return std::make_unique<RandomResize>(a); }
std::unique_ptr<GeometryOp> make_random_zoom_out(OpArgs& a) { return std::make_unique<RandomZoomOut>(a); }
std::unique_ptr<GeometryOp> make_scale_jitter(OpArgs& a) { return std::make_unique<ScaleJitter>(a); }
std::unique_ptr<GeometryOp> make_random_shortest_size(OpArgs& a) {
  return std::make_unique<RandomShortestSize>(a);
}
std::unique_ptr<GeometryOp> make_fixed_size_crop(OpArgs& a) { return std::make_unique<FixedSizeCrop>(a); }
std::unique_ptr<GeometryOp> make_random_iou_crop(OpArgs& a) { return std::make_unique<RandomIoUCrop>(a); }

}  // namespace forkfeed
