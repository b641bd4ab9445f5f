// The factory of every op in the table (transforms/op_table.cpp), by the file that holds
// the op: each reads the op's arguments from `a`, where a wrong one is recorded.
#pragma once

#include <memory>

#include "transforms/op_args.h"
#include "transforms/ops.h"

namespace forkfeed {

// transforms/ops_geometry.cpp
std::unique_ptr<Op> make_resize(OpArgs& a);
std::unique_ptr<Op> make_center_crop(OpArgs& a);
std::unique_ptr<Op> make_random_crop(OpArgs& a);
std::unique_ptr<Op> make_random_resized_crop(OpArgs& a);

// transforms/ops_geometry_v2.cpp
std::unique_ptr<Op> make_random_resize(OpArgs& a);
std::unique_ptr<Op> make_random_zoom_out(OpArgs& a);
std::unique_ptr<Op> make_scale_jitter(OpArgs& a);
std::unique_ptr<Op> make_random_shortest_size(OpArgs& a);
std::unique_ptr<Op> make_fixed_size_crop(OpArgs& a);
std::unique_ptr<Op> make_random_iou_crop(OpArgs& a);

// transforms/ops_moves.cpp
std::unique_ptr<Op> make_random_horizontal_flip(OpArgs& a);
std::unique_ptr<Op> make_random_vertical_flip(OpArgs& a);
std::unique_ptr<Op> make_random_rotation(OpArgs& a);
std::unique_ptr<Op> make_random_affine(OpArgs& a);

// transforms/ops_color.cpp
std::unique_ptr<Op> make_color_jitter(OpArgs& a);
std::unique_ptr<Op> make_random_photometric_distort(OpArgs& a);
std::unique_ptr<Op> make_grayscale(OpArgs& a);
std::unique_ptr<Op> make_random_grayscale(OpArgs& a);
std::unique_ptr<Op> make_gaussian_blur(OpArgs& a);
std::unique_ptr<Op> make_random_posterize(OpArgs& a);
std::unique_ptr<Op> make_random_solarize(OpArgs& a);
std::unique_ptr<Op> make_random_adjust_sharpness(OpArgs& a);
std::unique_ptr<Op> make_random_autocontrast(OpArgs& a);
std::unique_ptr<Op> make_random_equalize(OpArgs& a);
std::unique_ptr<Op> make_random_invert(OpArgs& a);

// transforms/ops_augment_policies.cpp
std::unique_ptr<Op> make_auto_augment(OpArgs& a);
std::unique_ptr<Op> make_rand_augment(OpArgs& a);
std::unique_ptr<Op> make_trivial_augment_wide(OpArgs& a);
std::unique_ptr<Op> make_aug_mix(OpArgs& a);

// transforms/ops_tensor.cpp
std::unique_ptr<Op> make_normalize(OpArgs& a, const OpDefaults& defaults);
std::unique_ptr<Op> make_random_erasing(OpArgs& a);

}  // namespace forkfeed
