// Crop geometry, transcribed from torchvision so the same image gets the same crop.
#include "transforms/crop.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace forkfeed {
namespace {
int saturate(std::int64_t v) { return static_cast<int>(std::min<std::int64_t>(v, INT32_MAX)); }
}  // namespace

std::array<int, 2> draw_box_sides(double area, std::array<double, 2> scale, std::array<double, 2> log_ratio,
                                  KeyedRng& rng) {
  const double target_area = area * rng.uniform(scale[0], scale[1]);
  const double aspect = std::exp(rng.uniform(log_ratio[0], log_ratio[1]));
  return {round_half_even(std::sqrt(target_area * aspect)), round_half_even(std::sqrt(target_area / aspect))};
}

CropBox random_resized_crop(int width, int height, KeyedRng& rng, std::array<double, 2> scale,
                            std::array<double, 2> ratio) {
  const double area = static_cast<double>(width) * height;
  const std::array<double, 2> log_ratio{std::log(ratio[0]), std::log(ratio[1])};
  for (int attempt = 0; attempt < 10; ++attempt) {
    const auto [w, h] = draw_box_sides(area, scale, log_ratio, rng);
    if (0 < w && w <= width && 0 < h && h <= height) {
      CropBox box{static_cast<int>(rng.below(width - w + 1)), 0, w, h};
      box.y = static_cast<int>(rng.below(height - h + 1));
      return box;
    }
  }
  // The central crop at the nearest allowed aspect ratio.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio[0]) {
    h = round_half_even(w / ratio[0]);
  } else if (in_ratio > ratio[1]) {
    w = round_half_even(h * ratio[1]);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

std::array<int, 2> resized_size(int width, int height, int shorter) {
  if (width <= height) return {shorter, saturate(static_cast<std::int64_t>(shorter) * height / width)};
  return {saturate(static_cast<std::int64_t>(shorter) * width / height), shorter};
}

int center_crop_offset(int length, int crop) { return round_half_even((length - crop) / 2.0); }

int eval_resize_for(int size) { return static_cast<int>(std::lround(size / 0.875)); }

}  // namespace forkfeed
