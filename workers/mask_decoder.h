// decode_mask: a mask member's class ids as they are stored, one uint8 per pixel — a PNG of
// 8-bit (or fewer bits) grey, or of palette *indices*, never turned into colours as an
// image decoder turns them (a palette seg.png read as RGB is a known trap); or a 2-D uint8
// .npy. Everything else is bad data that says what it is and what a mask must be.
#pragma once

#include <cstdint>

#include <opencv2/core/mat.hpp>
#include "forkfeed/status.h"
#include "workers/image_decoder.h"

namespace forkfeed {

// Decodes `bytes` into `out` (CV_8UC1, reallocated when its size differs). A mask of more
// than `max_pixels` pixels is bad data (0: no bound). Rows after `last_row` may be left
// undecoded (a PNG's decoder stops there: its data is one stream, read in row order); the
// CRC of every chunk is checked all the same, and a PNG without its IEND is refused.
Status decode_mask(FileBytes bytes, std::uint64_t max_pixels, cv::Mat& out, int last_row = INT32_MAX);

}  // namespace forkfeed
