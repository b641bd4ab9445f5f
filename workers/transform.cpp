// Transform: plan the window, then resize, flip and convert with OpenCV into slot memory.
#include "workers/transform.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>
#include <string>

namespace forkfeed {

std::size_t sample_bytes(DType dtype, std::uint32_t size) {
  return std::size_t{size} * size * 3 * (dtype == DType::kUint8 ? 1 : sizeof(float));
}

Result<SampleWindow> Transform::plan(int width, int height, KeyedRng& rng) const {
  if (spec_.kind == TransformKind::kTrain) return train_window(width, height, rng);
  const EvalPlan plan = center_crop_plan(width, height, static_cast<int>(spec_.size));
  const auto resized_pixels = static_cast<std::uint64_t>(plan.resized_width) * plan.resized_height;
  if (plan.resized_width <= 0 || plan.resized_height <= 0 || resized_pixels > spec_.max_pixels) {
    return Status::BadData("aspect ratio too extreme for the eval resize: " + std::to_string(width) + "x" +
                           std::to_string(height) + " would become " + std::to_string(resized_pixels) +
                           " pixels > max_pixels " + std::to_string(spec_.max_pixels));
  }
  return eval_window(plan, width, height);
}

void Transform::resize(const cv::Mat& from, cv::Mat& to) {
  const bool halves = 2 * to.cols <= from.cols && 2 * to.rows <= from.rows;
  const int interpolation = halves ? cv::INTER_AREA : cv::INTER_LINEAR;
  cv::resize(from, to, to.size(), 0, 0, interpolation);
}

Transform::Transform(const TransformSpec& spec) : spec_(spec), layout_(resolve(spec.layout, spec.dtype)) {
  // (x / 255 - mean) / std  ==  x * scale + shift, repeated over the 12 values of 4 RGB
  // pixels (a whole number of 4-float vectors).
  for (int k = 0; k < kPattern; ++k) {
    const int c = k % 3;
    scale_[k] = static_cast<float>(1.0 / (255.0 * spec_.std[c]));
    shift_[k] = static_cast<float>(-spec_.mean[c] / spec_.std[c]);
  }
}

cv::Mat Transform::square_for(std::byte* out) {
  const int size = static_cast<int>(spec_.size);
  if (spec_.dtype == DType::kUint8 && layout_ == Layout::kNhwc) return cv::Mat(size, size, CV_8UC3, out);
  square_.create(size, size, CV_8UC3);
  return square_;
}

void Transform::write(const cv::Mat& window, bool flip, std::byte* out) {
  cv::Mat square = square_for(out);
  resize(window, square);
  if (flip) cv::flip(square, square, 1);  // in place, in cache: a 224 x 224 sample is 150 KB
  store(square, out);
}

Status Transform::apply(const cv::Mat& rgb, KeyedRng& rng, std::byte* out) {
  auto window = plan(rgb.cols, rgb.rows, rng);
  if (!window.ok()) return window.status();
  if (spec_.kind == TransformKind::kTrain) {
    const Region& r = window->source;
    write(rgb(cv::Rect(static_cast<int>(r.x), static_cast<int>(r.y), static_cast<int>(r.width),
                       static_cast<int>(r.height))),
          window->flip, out);
    return Status::Ok();
  }
  const int size = static_cast<int>(spec_.size);
  const EvalPlan plan = center_crop_plan(rgb.cols, rgb.rows, size);
  resized_.create(plan.resized_height, plan.resized_width, CV_8UC3);
  resize(rgb, resized_);
  cv::Mat square = square_for(out);
  resized_(cv::Rect(plan.crop.x, plan.crop.y, size, size)).copyTo(square);
  store(square, out);
  return Status::Ok();
}

namespace {

// `n` values of `in` to `out` as x * scale + shift: a loop the compiler vectorises
// (uint8 widened to float, one multiply-add per lane).
void normalise(const std::uint8_t* in, std::size_t n, float scale, float shift, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) * scale + shift;
}

// The same for interleaved channels, whose constants repeat every P values: P lanes at
// a time, from local copies of the constants, so that nothing aliases the output.
template <int P>
void normalise_interleaved(const std::uint8_t* __restrict in, std::size_t n, const float (&scale)[P],
                           const float (&shift)[P], float* __restrict out) {
  float a[P], b[P];
  std::copy(scale, scale + P, a);
  std::copy(shift, shift + P, b);
  std::size_t i = 0;
  for (; i + P <= n; i += P) {
    for (int k = 0; k < P; ++k) out[i + k] = static_cast<float>(in[i + k]) * a[k] + b[k];
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]) * a[i % P] + b[i % P];
}

}  // namespace

void Transform::store(const cv::Mat& square, std::byte* out) {
  if (square.data == reinterpret_cast<const std::uint8_t*>(out)) return;  // made in the slot: uint8 NHWC
  const std::size_t n = static_cast<std::size_t>(square.rows) * square.cols;  // pixels
  if (layout_ == Layout::kNchw) {
    // OpenCV's split deinterleaves with SIMD: straight into the slot for uint8, into
    // planes_ (in cache) to normalise for float32.
    const int size = square.rows;
    for (int c = 0; c < 3; ++c) {
      if (spec_.dtype == DType::kUint8) {
        planes_[c] = cv::Mat(size, size, CV_8U, out + static_cast<std::size_t>(c) * n);
      } else {
        planes_[c].create(size, size, CV_8U);
      }
    }
    cv::split(square, planes_);
    if (spec_.dtype == DType::kFloat32) {
      auto* floats = reinterpret_cast<float*>(out);
      for (int c = 0; c < 3; ++c) normalise(planes_[c].ptr<std::uint8_t>(), n, scale_[c], shift_[c], floats + c * n);
    }
    return;
  }
  // float32 NHWC: channels interleaved, so the constants repeat every kPattern values.
  normalise_interleaved(square.ptr<std::uint8_t>(), 3 * n, scale_, shift_, reinterpret_cast<float*>(out));
}

}  // namespace forkfeed
