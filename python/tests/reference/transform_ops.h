// transform_ops: one functional op of libforkfeed's transforms applied to one raw image,
// for test_transform_fidelity.py to compare with torchvision's. Usage:
//   transform_ops IN.raw HEIGHT WIDTH OUT.raw OP [ARG...]
// IN.raw holds HEIGHT x WIDTH x 3 uint8 (RGB, interleaved); OUT.raw gets the result in
// the same form. OP names the op as torchvision.transforms.functional (or autoaugment's
// _apply_op) does; ARGs are numbers.
#pragma once

#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

// The colour ops (transform_ops.cpp) and the geometric and AutoAugment ones
// (transform_ops_geometry.cpp): false for a name it does not know.
bool colour_op(const std::string& name, const std::vector<double>& args, cv::Mat& img);
bool geometry_op(const std::string& name, const std::vector<double>& args, cv::Mat& img);
