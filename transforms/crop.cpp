// Crop geometry, transcribed from torchvision so the same image gets the same crop.
#include "transforms/crop.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace forkfeed {
namespace {
int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }
// A 1 x 10^7 strip resizes past INT_MAX; the caller refuses anything that large.
int saturate(std::int64_t v) { return static_cast<int>(std::min<std::int64_t>(v, INT32_MAX)); }
}  // namespace

CropBox random_resized_crop(int width, int height, KeyedRng& rng) {
  constexpr double kScaleMin = 0.08, kScaleMax = 1.0;
  constexpr double kRatioMin = 3.0 / 4.0, kRatioMax = 4.0 / 3.0;
  const double area = static_cast<double>(width) * height;
  const double log_min = std::log(kRatioMin), log_max = std::log(kRatioMax);
  CropBox box;
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target_area = area * rng.uniform(kScaleMin, kScaleMax);
    const double aspect = std::exp(rng.uniform(log_min, log_max));
    const int w = round_half_even(std::sqrt(target_area * aspect));
    const int h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      box = {static_cast<int>(rng.below(width - w + 1)), 0, w, h};
      box.y = static_cast<int>(rng.below(height - h + 1));
      found = true;
    }
  }
  if (!found) {  // central crop at the nearest allowed aspect ratio
    const double in_ratio = static_cast<double>(width) / height;
    int w = width, h = height;
    if (in_ratio < kRatioMin) {
      h = round_half_even(w / kRatioMin);
    } else if (in_ratio > kRatioMax) {
      w = round_half_even(h * kRatioMax);
    }
    box = {(width - w) / 2, (height - h) / 2, w, h};
  }
  box.flip = rng.uniform(0.0, 1.0) < 0.5;
  return box;
}

int eval_resize_for(int size) { return static_cast<int>(std::lround(size / 0.875)); }

EvalPlan center_crop_plan(int width, int height, int size) {
  const int shorter = eval_resize_for(size);
  EvalPlan plan;
  if (width <= height) {
    plan.resized_width = shorter;
    plan.resized_height = saturate(static_cast<std::int64_t>(shorter) * height / width);
  } else {
    plan.resized_height = shorter;
    plan.resized_width = saturate(static_cast<std::int64_t>(shorter) * width / height);
  }
  plan.crop.width = plan.crop.height = size;
  plan.crop.x = round_half_even((plan.resized_width - size) / 2.0);
  plan.crop.y = round_half_even((plan.resized_height - size) / 2.0);
  return plan;
}

SampleWindow train_window(int width, int height, KeyedRng& rng) {
  const CropBox box = random_resized_crop(width, height, rng);
  return {{static_cast<double>(box.x), static_cast<double>(box.y), static_cast<double>(box.width),
           static_cast<double>(box.height)},
          box.flip};
}

SampleWindow eval_window(const EvalPlan& plan, int width, int height) {
  const double sx = static_cast<double>(width) / plan.resized_width;
  const double sy = static_cast<double>(height) / plan.resized_height;
  return {{plan.crop.x * sx, plan.crop.y * sy, plan.crop.width * sx, plan.crop.height * sy}, false};
}

}  // namespace forkfeed
