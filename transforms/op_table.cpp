// The one table of the ops that exist: each op's name, its parameters in torchvision's
// order and its factory (transforms/op_factories.h); make_op() and op_names() read it.
#include "transforms/op_table.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "transforms/op_args.h"
#include "transforms/op_factories.h"
#include "transforms/ops.h"

namespace forkfeed {
namespace {

using Make = std::function<StagedOp(OpArgs&, const OpDefaults&)>;

struct OpEntry {
  std::string_view name;
  std::vector<std::string_view> params;
  Make make;
};

// An op made from its arguments alone (every op but Normalize, which defaults to the options').
template <typename Made>
Make plain(Made (*make)(OpArgs&)) {
  return [make](OpArgs& a, const OpDefaults&) -> StagedOp { return make(a); };
}

const std::vector<OpEntry>& table() {
  static const std::vector<OpEntry> ops = {
      {"Resize", {"size", "interpolation", "max_size", "antialias"}, plain(make_resize)},
      {"CenterCrop", {"size"}, plain(make_center_crop)},
      {"RandomCrop", {"size", "padding", "pad_if_needed", "fill", "padding_mode"}, plain(make_random_crop)},
      {"RandomResize", {"min_size", "max_size", "interpolation", "antialias"}, plain(make_random_resize)},
      {"RandomZoomOut", {"fill", "side_range", "p"}, plain(make_random_zoom_out)},
      {"ScaleJitter", {"target_size", "scale_range", "interpolation", "antialias"}, plain(make_scale_jitter)},
      {"RandomShortestSize",
       {"min_size", "max_size", "interpolation", "antialias"},
       plain(make_random_shortest_size)},
      {"FixedSizeCrop", {"size", "fill", "padding_mode"}, plain(make_fixed_size_crop)},
      {"RandomIoUCrop",
       {"min_scale", "max_scale", "min_aspect_ratio", "max_aspect_ratio", "sampler_options", "trials"},
       plain(make_random_iou_crop)},
      {"RandomResizedCrop",
       {"size", "scale", "ratio", "interpolation", "antialias"},
       plain(make_random_resized_crop)},
      {"RandomHorizontalFlip", {"p"}, plain(make_random_horizontal_flip)},
      {"RandomVerticalFlip", {"p"}, plain(make_random_vertical_flip)},
      {"ColorJitter", {"brightness", "contrast", "saturation", "hue"}, plain(make_color_jitter)},
      {"RandomPhotometricDistort",
       {"brightness", "contrast", "saturation", "hue", "p"},
       plain(make_random_photometric_distort)},
      {"Grayscale", {"num_output_channels"}, plain(make_grayscale)},
      {"RandomGrayscale", {"p"}, plain(make_random_grayscale)},
      {"GaussianBlur", {"kernel_size", "sigma"}, plain(make_gaussian_blur)},
      {"RandomRotation",
       {"degrees", "interpolation", "expand", "center", "fill"},
       plain(make_random_rotation)},
      {"RandomAffine",
       {"degrees", "translate", "scale", "shear", "interpolation", "fill", "center"},
       plain(make_random_affine)},
      {"RandomPosterize", {"bits", "p"}, plain(make_random_posterize)},
      {"RandomSolarize", {"threshold", "p"}, plain(make_random_solarize)},
      {"RandomAdjustSharpness", {"sharpness_factor", "p"}, plain(make_random_adjust_sharpness)},
      {"RandomAutocontrast", {"p"}, plain(make_random_autocontrast)},
      {"RandomEqualize", {"p"}, plain(make_random_equalize)},
      {"RandomInvert", {"p"}, plain(make_random_invert)},
      {"AutoAugment", {"policy", "interpolation", "fill"}, plain(make_auto_augment)},
      {"RandAugment",
       {"num_ops", "magnitude", "num_magnitude_bins", "interpolation", "fill"},
       plain(make_rand_augment)},
      {"TrivialAugmentWide",
       {"num_magnitude_bins", "interpolation", "fill"},
       plain(make_trivial_augment_wide)},
      {"AugMix",
       {"severity", "mixture_width", "chain_depth", "alpha", "all_ops", "interpolation", "fill"},
       plain(make_aug_mix)},
      {"Normalize", {"mean", "std", "inplace"}, make_normalize},
      {"RandomErasing", {"p", "scale", "ratio", "value", "inplace"}, plain(make_random_erasing)},
  };
  return ops;
}

}  // namespace

Result<StagedOp> make_op(const OpCall& call, const OpDefaults& defaults) {
  for (const OpEntry& e : table()) {
    if (e.name != call.name) continue;
    OpArgs args(call, e.params);
    if (!args.status().ok()) return args.status();
    StagedOp op = e.make(args, defaults);
    if (!args.status().ok()) return args.status();
    return op;
  }
  std::string names;
  for (const OpEntry& e : table()) names.append(names.empty() ? "" : ", ").append(e.name);
  return Status::InvalidArgument("transform: unknown op '" + call.name + "' in " + call.text +
                                 " (forkfeed has: " + names + "; or the shorthands train and eval)");
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpEntry& e : table()) names.emplace_back(e.name);
  return names;
}

}  // namespace forkfeed
