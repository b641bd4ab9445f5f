// FusedDecode: resize the planned window with OpenCV, run the pipeline's pixel ops, write
// the sample into slot memory (PixelStore), run its tensor ops there.
#include "workers/fused_decode.h"

#include "transforms/bilinear_resize.h"

#include <opencv2/imgproc.hpp>
#include <stdexcept>

namespace forkfeed {
namespace {

Pipeline pipeline_for(const TransformSpec& spec) {
  const PipelineOptions options{spec.size,
                                spec.dtype,
                                {spec.mean[0], spec.mean[1], spec.mean[2]},
                                {spec.std[0], spec.std[1], spec.std[2]},
                                spec.max_pixels,
                                spec.max_size};
  auto pipeline = Pipeline::build(spec.pipeline, options);
  // The loader built this same text with these same options before it started workers.
  if (!pipeline.ok()) throw std::invalid_argument(pipeline.status().message());
  return std::move(pipeline).value();
}

Normalisation normalisation_of(const OpDefaults& d) {
  const float mean[3] = {d.mean[0], d.mean[1], d.mean[2]};
  const float std[3] = {d.std[0], d.std[1], d.std[2]};
  return Normalisation::of(mean, std);
}

}  // namespace

void FusedDecode::resize(const cv::Mat& from, cv::Mat& to) {
  const bool halves = 2 * to.cols <= from.cols && 2 * to.rows <= from.rows;
  if (halves) {
    cv::resize(from, to, to.size(), 0, 0, cv::INTER_AREA);
  } else {
    bilinear_resize(from, to);  // cv::INTER_LINEAR's bytes
  }
}

FusedDecode::FusedDecode(const TransformSpec& spec)
    : pipeline_(pipeline_for(spec)),
      layout_(resolve(spec.layout, pipeline_.dtype())),
      makes_in_slot_(pipeline_.dtype() == DType::kUint8 && layout_ == Layout::kNhwc &&
                     pipeline_.pixel_ops_are_mirrors()),
      store_(pipeline_.dtype(), layout_, normalisation_of(pipeline_.normalisation())) {}

Status FusedDecode::draw_steps(int width, int height, KeyedRng& rng, SampleGeometry* geometry) {
  Status s;
  if (geometry == nullptr) {
    s = pipeline_.steps(width, height, rng, steps_);
  } else {
    geometry->width = width;
    geometry->height = height;
    geometry->moves.clear();
    thread_local std::vector<Box> boxes;  // in the decoded image's pixels, XYXY
    boxes.clear();
    if (pipeline_.needs_boxes()) {
      for (const Box& b : geometry->boxes)
        boxes.push_back(to_xyxy(b, geometry->box_format, geometry->box_normalized, {width, height}));
    }
    s = pipeline_.steps(width, height, rng, geometry->steps, boxes);
  }
  if (!s.ok()) return s;
  const std::vector<GeometryStep>& steps = steps_of(geometry);
  size_ = steps.empty() ? cv::Size(width, height) : cv::Size(steps.back().out_width, steps.back().out_height);
  const auto most = static_cast<int>(pipeline_.max_size());
  if (pipeline_.size() == 0 && (size_.width > most || size_.height > most)) {
    return Status::BadData(
        "the transform makes this " + std::to_string(width) + "x" + std::to_string(height) + " image " +
        std::to_string(size_.width) + "x" + std::to_string(size_.height) + ", over max_size " +
        std::to_string(most) +
        " a side: raise max_size, or bound the size in the transform (Resize(n, max_size=m))");
  }
  return Status::Ok();
}

Result<SampleWindow> FusedDecode::plan(int width, int height, KeyedRng& rng, SampleGeometry* geometry) {
  if (Status s = draw_steps(width, height, rng, geometry); !s.ok()) return s;
  return Pipeline::window_of(steps_of(geometry), width, height);
}

void FusedDecode::place(const cv::Mat& pixels, const SampleWindow& window, cv::Mat& to) {
  if (window.x == 0 && window.y == 0 && window.width == to.cols && window.height == to.rows) {
    resize(pixels, to);
    return;
  }
  to.setTo(cv::Scalar(window.fill[0], window.fill[1], window.fill[2]));
  if (window.empty()) return;
  cv::Mat shown = to(cv::Rect(window.x, window.y, window.width, window.height));
  resize(pixels, shown);
}

void FusedDecode::write(const cv::Mat& pixels, const SampleWindow& window, KeyedRng& rng, std::byte* out,
                        SampleGeometry* geometry) {
  fn::Moves* moves = geometry != nullptr ? &geometry->moves : nullptr;
  if (makes_in_slot_) {
    // Flips alone look at no pixel: their draws can come before the resize.
    const bool mirror = pipeline_.run_pixels(square_, rng, moves);
    if (!mirror) {
      cv::Mat slot(size_, CV_8UC3, out);
      place_timed(pixels, window, slot);
      return;
    }
    square_.create(size_, CV_8UC3);
    place_timed(pixels, window, square_);
    store_timed(square_, true, out);
    return;
  }
  square_.create(size_, CV_8UC3);
  place_timed(pixels, window, square_);
  finish(rng, out, moves);
}

void FusedDecode::finish(KeyedRng& rng, std::byte* out, fn::Moves* moves) {
  const bool mirror = pipeline_.run_pixels(square_, rng, moves);
  store_timed(square_, mirror, out);
  if (pipeline_.has_tensor_ops()) {
    pipeline_.run_tensor({reinterpret_cast<float*>(out), square_.rows, square_.cols, layout_}, rng);
  }
}

void FusedDecode::place_timed(const cv::Mat& pixels, const SampleWindow& window, cv::Mat& to) {
  const StageTimer timer(profile_, resize_stage_);
  place(pixels, window, to);
}

void FusedDecode::store_timed(const cv::Mat& sample, bool mirror, std::byte* out) {
  const StageTimer timer(profile_, store_stage_);
  store_.write(sample, mirror, out);
}

void FusedDecode::profile_into(StageProfile* profile) {
  profile_ = profile;
  if (profile != nullptr) resize_stage_ = profile->stage("crops and resizes");
  const bool normalises = pipeline_.dtype() == DType::kFloat32;
  store_stage_ = pipeline_.profile_into(profile, "store: " + std::string(to_string(pipeline_.dtype())) + " " +
                                                     (layout_ == Layout::kNchw ? "NCHW" : "NHWC") +
                                                     (normalises ? ", Normalize" : "") + ", flips");
}

Status FusedDecode::apply(const cv::Mat& rgb, KeyedRng& rng, std::byte* out, SampleGeometry* geometry) {
  if (Status s = draw_steps(rgb.cols, rgb.rows, rng, geometry); !s.ok()) return s;
  {
    const StageTimer timer(profile_, resize_stage_);
    cv::Mat image = rgb;
    int next = 0;
    for (const GeometryStep& step : steps_of(geometry)) {
      image = fn::crop(image, step.x, step.y, step.width, step.height, step.fill);
      if (!step.resizes()) continue;
      cv::Mat& to = scaled_[next];
      next ^= 1;
      to.create(step.out_height, step.out_width, CV_8UC3);
      resize(image, to);
      image = to;
    }
    image.copyTo(square_);
  }
  finish(rng, out, geometry != nullptr ? &geometry->moves : nullptr);
  return Status::Ok();
}

}  // namespace forkfeed
