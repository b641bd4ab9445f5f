// The geometric and AutoAugment ops of transform_ops (see transform_ops.h): being written.
#include "python/tests/reference/transform_ops.h"

bool geometry_op(const std::string&, const std::vector<double>&, cv::Mat&) { return false; }
