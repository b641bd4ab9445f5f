// The factory of every op in the table (transforms/op_table.cpp), by the file that holds
// the op: each reads the op's arguments from `a`, where a wrong one is recorded, and makes
// an op of its stage's base (Normalize: its mean and std).
#pragma once

#include <memory>

#include "transforms/op_args.h"
#include "transforms/ops.h"

namespace forkfeed {

// transforms/ops_geometry.cpp
std::unique_ptr<GeometryOp> make_resize(OpArgs& a);
std::unique_ptr<GeometryOp> make_center_crop(OpArgs& a);
std::unique_ptr<GeometryOp> make_random_crop(OpArgs& a);
std::unique_ptr<GeometryOp> make_random_resized_crop(OpArgs& a);

// transforms/ops_geometry_v2.cpp
std::unique_ptr<GeometryOp> make_random_resize(OpArgs& a);
std::unique_ptr<GeometryOp> make_random_zoom_out(OpArgs& a);
std::unique_ptr<GeometryOp> make_scale_jitter(OpArgs& a);
std::unique_ptr<GeometryOp> make_random_shortest_size(OpArgs& a);
std::unique_ptr<GeometryOp> make_fixed_size_crop(OpArgs& a);
std::unique_ptr<GeometryOp> make_random_iou_crop(OpArgs& a);

// transforms/ops_moves.cpp
std::unique_ptr<PixelOp> make_random_horizontal_flip(OpArgs& a);
std::unique_ptr<PixelOp> make_random_vertical_flip(OpArgs& a);
std::unique_ptr<PixelOp> make_random_rotation(OpArgs& a);
std::unique_ptr<PixelOp> make_random_affine(OpArgs& a);

// transforms/ops_color.cpp
std::unique_ptr<PixelOp> make_color_jitter(OpArgs& a);
std::unique_ptr<PixelOp> make_random_photometric_distort(OpArgs& a);
std::unique_ptr<PixelOp> make_grayscale(OpArgs& a);
std::unique_ptr<PixelOp> make_random_grayscale(OpArgs& a);
std::unique_ptr<PixelOp> make_gaussian_blur(OpArgs& a);
std::unique_ptr<PixelOp> make_random_posterize(OpArgs& a);
std::unique_ptr<PixelOp> make_random_solarize(OpArgs& a);
std::unique_ptr<PixelOp> make_random_adjust_sharpness(OpArgs& a);
std::unique_ptr<PixelOp> make_random_autocontrast(OpArgs& a);
std::unique_ptr<PixelOp> make_random_equalize(OpArgs& a);
std::unique_ptr<PixelOp> make_random_invert(OpArgs& a);

// transforms/ops_augment_policies.cpp
std::unique_ptr<PixelOp> make_auto_augment(OpArgs& a);
std::unique_ptr<PixelOp> make_rand_augment(OpArgs& a);
std::unique_ptr<PixelOp> make_trivial_augment_wide(OpArgs& a);
std::unique_ptr<PixelOp> make_aug_mix(OpArgs& a);

// transforms/ops_tensor.cpp
OpDefaults make_normalize(OpArgs& a, const OpDefaults& defaults);
std::unique_ptr<TensorOp> make_random_erasing(OpArgs& a);

}  // namespace forkfeed
