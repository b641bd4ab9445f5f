// decode_mask: a mask member's class ids as they are stored — a PNG of grey (1 to 16 bits)
// or of palette *indices*, never turned into colours as an image decoder turns them (a
// palette seg.png read as RGB is a known trap); or a 2-D uint8 or uint16 .npy. Everything
// else is bad data that says what it is and what a mask must be.
#pragma once

#include <cstdint>

#include <opencv2/core/mat.hpp>
#include "forkfeed/status.h"
#include "workers/image_decoder.h"

namespace forkfeed {

// Decodes `bytes` into `mask`, of `type` (CV_8UC1 or CV_16UC1: the field's) over memory this
// reuses (`storage`, reuse_pixels), which must be `size`, its image's: a mask of another
// size is bad data, found from its header before any pixel is allocated. 8-bit ids widen
// into a uint16 field; 16-bit ids in a uint8 field are bad data. Rows after `last_row` may be left undecoded
// (libpng stops there for the masks it decodes: fewer than 8 bits a pixel, or interlaced); the CRC of every
// chunk is checked all the same, and a PNG without its IEND is refused.
Status decode_mask(FileBytes bytes, cv::Size size, int type, cv::Mat& storage, cv::Mat& mask,
                   int last_row = INT32_MAX);

}  // namespace forkfeed
