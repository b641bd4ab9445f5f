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

// Decodes `bytes` into `mask`, CV_8UC1 over `storage`'s memory (reuse_pixels), which must
// be `size`, its image's: a mask of another size is bad data, found from its header before
// any pixel is allocated. Rows after `last_row` may be left undecoded (libpng stops there for
// the masks it decodes: fewer than 8 bits a pixel, or interlaced); the CRC of every chunk
// is checked all the same, and a PNG without its IEND is refused.
Status decode_mask(FileBytes bytes, cv::Size size, cv::Mat& storage, cv::Mat& mask, int last_row = INT32_MAX);

}  // namespace forkfeed
