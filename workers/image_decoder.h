// Image decoders behind one small interface: libjpeg-turbo for JPEG, OpenCV for every
// other format. Each decodes to 8-bit RGB (torchvision's convention): grayscale is
// expanded, CMYK converted; EXIF orientation is ignored, as torchvision does.
#pragma once

#include <cstddef>
#include <memory>
#include <opencv2/core/mat.hpp>
#include <span>

#include "forkfeed/status.h"

namespace forkfeed {

using FileBytes = std::span<const std::byte>;

struct ImageSize {
  int width = 0, height = 0;  // 0 x 0: the format's header does not say cheaply
};

class ImageDecoder {
 public:
  virtual ~ImageDecoder() = default;
  // Reads the image size from the header without decoding pixels.
  virtual Result<ImageSize> probe(FileBytes file) = 0;
  // Decodes the whole image into `rgb` (CV_8UC3), reusing its buffer when it fits.
  virtual Status decode(FileBytes file, cv::Mat& rgb) = 0;
};

std::unique_ptr<ImageDecoder> make_jpeg_decoder();
std::unique_ptr<ImageDecoder> make_opencv_decoder();

// Picks the decoder by content (not by file name) and enforces max_pixels before any
// pixel is decoded where the header allows it. Errors say what is wrong with the file;
// the caller adds its path.
class ImageDecoders {
 public:
  ImageDecoders();
  Status decode(FileBytes file, std::uint64_t max_pixels, cv::Mat& rgb);

 private:
  std::unique_ptr<ImageDecoder> jpeg_;
  std::unique_ptr<ImageDecoder> other_;
};

}  // namespace forkfeed
