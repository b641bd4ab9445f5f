// Transform: plan the window, resize it with OpenCV, and write it into slot memory (PixelStore).
#include "workers/transform.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>
#include <string>

namespace forkfeed {

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

Transform::Transform(const TransformSpec& spec)
    : spec_(spec),
      makes_in_slot_(spec.dtype == DType::kUint8 && resolve(spec.layout, spec.dtype) == Layout::kNhwc),
      store_(spec.dtype, resolve(spec.layout, spec.dtype), Normalisation::of(spec.mean, spec.std)) {}

void Transform::write(const cv::Mat& window, bool flip, std::byte* out) {
  const int size = static_cast<int>(spec_.size);
  if (makes_in_slot_ && !flip) {
    cv::Mat slot(size, size, CV_8UC3, out);
    resize(window, slot);
    return;
  }
  square_.create(size, size, CV_8UC3);
  resize(window, square_);
  store_.write(square_, flip, out);
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
  store_.write(resized_(cv::Rect(plan.crop.x, plan.crop.y, size, size)), false, out);
  return Status::Ok();
}

}  // namespace forkfeed
