// Pipeline: building one from its text (the order rules, the output size) and running
// its stages on a sample.
#include "transforms/pipeline.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <variant>

#include "transforms/functional.h"
#include "transforms/pipeline_spec.h"
#include "transforms/sample_geometry.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kShorthandSize = 224;

std::string_view trim_pipeline_text(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The pipelines the shorthands stand for.
std::string expand(std::string_view text, std::uint32_t size) {
  const std::string n = std::to_string(size == 0 ? kShorthandSize : size);
  if (text == "train") return "RandomResizedCrop(" + n + "), RandomHorizontalFlip()";
  if (text == "eval")
    return "Resize(" + std::to_string(eval_resize_for(std::stoi(n))) + "), CenterCrop(" + n + ")";
  return std::string(text);
}

Status order_error(const OpCall& op, const std::string& why) {
  return Status::InvalidArgument("transform: " + op.text + " " + why);
}

// The order rules of a pipeline, in one place: each op is admitted in turn after those
// before it, or refused saying where it goes instead. forkfeed runs the stages in a fixed
// order (crops and resizes, fused into the decode; uint8 pixel ops; Normalize; ops on the
// float tensor), so an op may not come after a later stage than its own — except a flip,
// which is the same flip before Normalize and moves back to the pixels.
class OrderCheck {
 public:
  // ToTensor or PILToTensor: no op, every batch is a tensor already. ToTensor's scaling
  // to [0, 1] is part of Normalize here, so it must be followed by one (finish()).
  Status conversion(const OpCall& call) {
    if (!call.positional.empty() || !call.keywords.empty()) return order_error(call, "takes no arguments");
    if (call.name == "ToTensor") to_tensor_ = &call;
    return Status::Ok();
  }

  // Admits `op`, made from `call`, or says why it cannot come here.
  Status admit(const OpCall& call, const StagedOp& op) {
    const Stage stage = stage_of(op);
    const bool moves_back = stage == Stage::kPixels && reached_ >= Stage::kNormalize &&
                            std::get<std::unique_ptr<PixelOp>>(op)->only_moves_pixels();
    if (stage == Stage::kGeometry && reached_ != Stage::kGeometry) {
      return order_error(
          call, "comes after " + (last_pixels_ ? last_pixels_->text : std::string("Normalize()")) +
                    ": forkfeed crops and resizes while it decodes, so Resize, CenterCrop, RandomCrop "
                    "and RandomResizedCrop come first");
    }
    if (moves_back && on_tensor_) return order_error(call, "comes after RandomErasing: put flips before it");
    if (stage == Stage::kPixels && reached_ > Stage::kPixels && !moves_back) {
      return order_error(call,
                         "works on uint8 images and comes after Normalize(): put it before Normalize()");
    }
    if (stage == Stage::kNormalize && normalised_) {
      return order_error(call, "is the second Normalize: keep one");
    }
    if (stage == Stage::kTensor && !normalised_) {
      return order_error(call,
                         "works on the normalised float tensor: put it after Normalize() (torchvision "
                         "refuses it on an image too)");
    }
    if (stage == Stage::kPixels && !moves_back) last_pixels_ = &call;
    normalised_ = normalised_ || stage == Stage::kNormalize;
    on_tensor_ = on_tensor_ || stage == Stage::kTensor;
    if (!moves_back && stage > reached_) reached_ = stage;
    return Status::Ok();
  }

  // The rule that needs the whole pipeline, once every op is admitted.
  Status finish() const {
    if (to_tensor_ != nullptr && !normalised_) {
      return order_error(*to_tensor_,
                         "without Normalize() after it: forkfeed's batches are uint8 unless "
                         "normalised; drop ToTensor() (or use PILToTensor()), or add Normalize()");
    }
    return Status::Ok();
  }

 private:
  Stage reached_ = Stage::kGeometry;     // the latest stage an op that stays in place reached
  const OpCall* last_pixels_ = nullptr;  // the last uint8 op that stays in place
  const OpCall* to_tensor_ = nullptr;
  bool normalised_ = false;
  bool on_tensor_ = false;  // an op on the float tensor (RandomErasing) came
};

// A geometry op whose output is larger than max_pixels for every image: each image
// would be refused as bad data (over max_pixels, when decoded or when resized), so the
// pipeline is refused instead, before any is read.
Status check_pixels(const GeometryOp& op, const OpCall& call, std::uint64_t max_pixels) {
  const auto [h, w] = op.least_shape();
  const std::uint64_t pixels = static_cast<std::uint64_t>(h) * static_cast<std::uint64_t>(w);
  if (max_pixels == 0 || pixels <= max_pixels) return Status::Ok();
  return Status::InvalidArgument(
      "transform: " + call.text + " makes images of at least " + std::to_string(w) + "x" + std::to_string(h) +
      " = " + std::to_string(pixels) + " pixels, over max_pixels " + std::to_string(max_pixels) +
      ", so every image would be refused as bad data: lower its size or raise max_pixels");
}

}  // namespace

Status Pipeline::add(StagedOp op, const OpCall& call, std::uint64_t max_pixels) {
  switch (stage_of(op)) {
    case Stage::kGeometry: {
      auto& geometry = std::get<std::unique_ptr<GeometryOp>>(op);
      if (Status s = check_pixels(*geometry, call, max_pixels); !s.ok()) return s;
      geometry_.push_back(std::move(geometry));
      break;
    }
    case Stage::kPixels: {
      auto& pixels = std::get<std::unique_ptr<PixelOp>>(op);
      if (!pixels->repeatable() && unrepeatable_.empty()) unrepeatable_ = call.text;
      op_texts_.insert(op_texts_.begin() + static_cast<std::ptrdiff_t>(pixels_.size()), call.text);
      pixels_.push_back(std::move(pixels));
      break;
    }
    case Stage::kNormalize:
      normalise_ = true;
      normalisation_ = std::get<OpDefaults>(op);
      break;
    case Stage::kTensor:
      op_texts_.push_back(call.text);
      tensor_.push_back(std::get<std::unique_ptr<TensorOp>>(std::move(op)));
      break;
  }
  return Status::Ok();
}

Result<Pipeline> Pipeline::build(std::string_view text, const PipelineOptions& options) {
  const std::string expanded = expand(trim_pipeline_text(text), options.size);
  auto calls = parse_calls(expanded);
  if (!calls.ok()) return calls.status();

  Pipeline p;
  p.max_pixels_ = options.max_pixels;
  p.normalisation_ = {options.mean, options.std};
  OrderCheck order;
  for (const OpCall& call : *calls) {
    if (call.name == "ToTensor" || call.name == "PILToTensor") {
      if (Status s = order.conversion(call); !s.ok()) return s;
      continue;
    }
    auto made = make_op(call, p.normalisation_);
    if (!made.ok()) return made.status();
    StagedOp op = std::move(made).value();
    if (Status s = order.admit(call, op); !s.ok()) return s;
    if (Status s = p.add(std::move(op), call, options.max_pixels); !s.ok()) return s;
  }
  if (Status s = order.finish(); !s.ok()) return s;

  std::array<int, 2> shape{-1, -1};
  for (const auto& op : p.geometry_) shape = op->shape(shape);
  const std::string made = shape[0] < 0
                               ? std::string("samples whose size depends on the image")
                               : std::to_string(shape[1]) + "x" + std::to_string(shape[0]) + " samples";
  if ((shape[0] < 0 || shape[0] != shape[1]) && options.max_size == 0) {
    return Status::InvalidArgument(
        "transform \"" + std::string(trim_pipeline_text(text)) + "\" makes " + made +
        "; batches of one tensor need one square size: end its crops and resizes with CenterCrop(n), "
        "RandomCrop(n), RandomResizedCrop(n) or Resize((n, n)); or give max_size, the longest side a sample "
        "may have, for samples of each their own size (a list a batch, with fields)");
  }
  if (shape[0] >= 0 && shape[0] != shape[1] &&
      std::max(shape[0], shape[1]) > static_cast<int>(options.max_size)) {
    return Status::InvalidArgument("transform \"" + std::string(trim_pipeline_text(text)) + "\" makes " +
                                   made + ", larger than max_size " + std::to_string(options.max_size) +
                                   ": raise max_size or make them smaller");
  }
  p.max_size_ = options.max_size;
  p.size_ = shape[0] >= 0 && shape[0] == shape[1] ? static_cast<std::uint32_t>(shape[0]) : 0;
  if (p.size_ == 0 && options.size != 0) {
    return Status::InvalidArgument("size " + std::to_string(options.size) +
                                   " is one size for every sample, and the " + "transform makes " + made +
                                   ": leave size out (0) and bound them with max_size");
  }
  if (options.size != 0 && options.size != p.size_) {
    return Status::InvalidArgument("size " + std::to_string(options.size) + " differs from the " +
                                   std::to_string(p.size_) + " x " + std::to_string(p.size_) +
                                   " samples the transform makes: leave size out (0) or make them agree");
  }
  if (options.dtype == DType::kFloat32) p.normalise_ = true;
  // One resample at most: the decoder's window is then one rectangle of the image resized
  // once; and one op that pads at most, whose fill is the rest of the sample.
  int resamples = 0, pads = 0;
  for (const auto& op : p.geometry_) {
    p.needs_boxes_ = p.needs_boxes_ || op->needs_boxes();
    resamples += op->resamples() ? 1 : 0;
    pads += op->pads() ? 1 : 0;
  }
  p.fusable_ = resamples <= 1 && pads <= 1;
  return p;
}

Status Pipeline::steps(int width, int height, KeyedRng& rng, std::vector<GeometryStep>& out,
                       std::span<const Box> boxes) const {
  out.clear();
  // The boxes as the steps so far moved them, for the ops that draw from them.
  thread_local std::vector<Box> moved;
  if (needs_boxes_) moved.assign(boxes.begin(), boxes.end());
  for (const auto& op : geometry_) {
    auto step = op->needs_boxes() ? op->step_among(width, height, rng, moved) : op->step(width, height, rng);
    if (!step.ok()) return step.status();
    const auto pixels =
        static_cast<std::uint64_t>(step->out_width) * static_cast<std::uint64_t>(step->out_height);
    if ((step->resizes() || !step->inside(width, height)) && pixels > max_pixels_) {
      return Status::BadData(std::string(step->resizes() ? "resizing" : "padding") + " this " +
                             std::to_string(width) + "x" + std::to_string(height) + " image to " +
                             std::to_string(step->out_width) + "x" + std::to_string(step->out_height) +
                             " makes " + std::to_string(pixels) + " pixels, over max_pixels " +
                             std::to_string(max_pixels_) +
                             ": lower the transform's resize or padding, or raise max_pixels");
    }
    out.push_back(*step);
    if (needs_boxes_) follow_step(*step, moved);
    width = step->out_width;
    height = step->out_height;
  }
  return Status::Ok();
}

Result<SampleWindow> Pipeline::plan(int width, int height, KeyedRng& rng) const {
  thread_local std::vector<GeometryStep> steps_of_sample;
  if (Status s = steps(width, height, rng, steps_of_sample); !s.ok()) return s;
  return window_of(steps_of_sample, width, height);
}

SampleWindow Pipeline::window_of(const std::vector<GeometryStep>& steps, int width, int height) {
  // Each step keeps part of the view and rescales it: map that part back to the image (r,
  // past its edges where a crop pads), and follow the rectangle of the view that shows
  // the image (shown, in the view's pixels).
  Region r{0, 0, static_cast<double>(width), static_cast<double>(height)};
  double view_width = width, view_height = height;
  double shown_x0 = 0, shown_y0 = 0, shown_x1 = width, shown_y1 = height;
  SampleWindow w;
  for (const GeometryStep& s : steps) {
    const double sx = r.width / view_width, sy = r.height / view_height;
    r = {r.x + s.x * sx, r.y + s.y * sy, s.width * sx, s.height * sy};
    shown_x0 = std::clamp(shown_x0 - s.x, 0.0, double(s.width));
    shown_x1 = std::clamp(shown_x1 - s.x, 0.0, double(s.width));
    shown_y0 = std::clamp(shown_y0 - s.y, 0.0, double(s.height));
    shown_y1 = std::clamp(shown_y1 - s.y, 0.0, double(s.height));
    const double rx = double(s.out_width) / s.width, ry = double(s.out_height) / s.height;
    shown_x0 *= rx, shown_x1 *= rx, shown_y0 *= ry, shown_y1 *= ry;
    if (!s.inside(static_cast<int>(view_width), static_cast<int>(view_height))) w.fill = s.fill;
    view_width = s.out_width;
    view_height = s.out_height;
  }
  // Whole pixels: where a resize follows padding (RandomZoomOut, then Resize), the image's
  // edge lands on the nearest one (torchvision's resize blends the fill into a pixel or two).
  w.x = static_cast<int>(std::lround(shown_x0));
  w.y = static_cast<int>(std::lround(shown_y0));
  w.width = static_cast<int>(std::lround(shown_x1)) - w.x;
  w.height = static_cast<int>(std::lround(shown_y1)) - w.y;
  if (w.x == 0 && w.y == 0 && w.width == view_width && w.height == view_height) {
    w.source = r;  // no padding shows
  } else {
    const double sx = r.width / view_width, sy = r.height / view_height;
    w.source = {r.x + w.x * sx, r.y + w.y * sy, w.width * sx, w.height * sy};
  }
  return w;
}

bool Pipeline::pixel_ops_are_mirrors() const {
  for (const auto& op : pixels_) {
    if (!op->is_mirror()) return false;
  }
  return true;
}

bool Pipeline::run_pixels(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) {
  bool mirror = false;
  for (std::size_t i = 0; i < pixels_.size(); ++i) {
    const auto& op = pixels_[i];
    const StageTimer timer(profile_, profile_ != nullptr ? op_stages_[i] : 0);
    if (op->is_mirror()) {
      const bool mirrors = op->mirrors(rng);
      // What comes between the draw and the flip commutes with it: recorded where drawn.
      if (mirrors && moves != nullptr) moves->push_back({fn::Move::Kind::kHflip, {}});
      mirror ^= mirrors;
      continue;
    }
    if (mirror && !op->commutes_with_mirror()) {
      fn::hflip(sample);
      mirror = false;
    }
    op->run(sample, rng, moves);
  }
  return mirror;
}

void Pipeline::run_tensor(TensorSample sample, KeyedRng& rng) {
  for (std::size_t i = 0; i < tensor_.size(); ++i) {
    const StageTimer timer(profile_, profile_ != nullptr ? op_stages_[pixels_.size() + i] : 0);
    tensor_[i]->run(sample, rng);
  }
}

std::size_t Pipeline::profile_into(StageProfile* profile, std::string_view store) {
  profile_ = profile;
  op_stages_.clear();
  if (profile == nullptr) return 0;
  std::size_t store_stage = 0;
  for (std::size_t i = 0; i < op_texts_.size(); ++i) {
    if (i == pixels_.size()) store_stage = profile->stage(store);
    op_stages_.push_back(profile->stage(op_texts_[i]));
  }
  return tensor_.empty() ? profile->stage(store) : store_stage;
}

}  // namespace forkfeed
