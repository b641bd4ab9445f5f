// transform_ops: functional ops of libforkfeed's transforms applied to one raw image,
// for test_transform_fidelity.py to compare with torchvision's. Usage:
//   transform_ops IN.raw HEIGHT WIDTH OUT.raw OP [ARG...] [; OUT.raw OP [ARG...]]...
// IN.raw holds HEIGHT x WIDTH x 3 uint8 (RGB, interleaved); each OUT.raw gets its OP
// applied to IN, in the same form (the groups, separated by a lone ";", save the tests a
// process start per op). OP names the op as torchvision.transforms.functional (or
// autoaugment's _apply_op) does; ARGs are numbers.
// Each op runs on a view inside a larger frame, as the pipeline's ops see crops: it must
// change the view in place and leave the frame around it alone (exit 3 otherwise). Exit
// 2: an unknown op or arguments it refuses.
#pragma once

#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

// The colour ops (transform_ops.cpp) and the geometric and AutoAugment ones
// (transform_ops_geometry.cpp): false for a name it does not know; they throw
// std::invalid_argument for arguments they cannot take.
bool colour_op(const std::string& name, const std::vector<double>& args, cv::Mat& img);
bool geometry_op(const std::string& name, const std::vector<double>& args, cv::Mat& img);
