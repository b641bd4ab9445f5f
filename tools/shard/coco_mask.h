// COCO's segmentations as pixels, the way pycocotools' mask API (maskApi.c) makes them, so
// that a mask packed here covers the pixels a COCO evaluation counts: run-length encodings
// (counts of 0s then 1s, alternating, down the columns of an h x w image: pixel (y, x) is
// number x * h + y), uncompressed lists or the compressed strings of iscrowd annotations,
// and polygons encoded into one.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <opencv2/core/mat.hpp>
#include "forkfeed/status.h"

namespace forkfeed {

using RunLengths = std::vector<std::uint32_t>;

// rleFrPoly: the polygon x1, y1, x2, y2, ... (pixels) on an h x w image: its boundary traced
// at 5 times the resolution, the points where it crosses each column's centre taken as the
// runs' ends.
RunLengths rle_from_polygon(std::span<const double> xy, int height, int width);

// rleFrString: the counts of a compressed RLE string (6 bits a character, from '0', each
// count after the second a difference from the one two before). BadData for a character out
// of that alphabet or a count that does not fit.
Result<RunLengths> rle_from_string(std::string_view text);

// Sets to `value` the pixels of `mask` (h x w, 8 or 16-bit) that `counts` covers. BadData
// when the counts do not add up to h x w, as a COCO RLE's must.
Status paint(const RunLengths& counts, cv::Mat& mask, int value);

}  // namespace forkfeed
