// Image decoders behind one small interface: libjpeg-turbo for JPEG, OpenCV for every
// other format. Each decodes to 8-bit RGB (torchvision's convention): grayscale is
// expanded, CMYK converted; EXIF orientation is ignored, as torchvision does.
#pragma once

#include <cstddef>
#include <memory>
#include <opencv2/core/mat.hpp>
#include <span>
#include <string_view>

#include "forkfeed/status.h"
#include "transforms/crop.h"

namespace forkfeed {

using FileBytes = std::span<const std::byte>;

// How a sample is decoded. kFused is the loader's: JPEG decodes only the crop window,
// at the coarsest DCT scale that keeps it at least the output size. kOpenCv is the
// reference the probe measures against: OpenCV's full decode of every format, then the
// transform in torchvision's order.
enum class DecodePath { kFused, kOpenCv };

struct ImageSize {
  int width = 0, height = 0;  // 0 x 0: the format's header does not say cheaply
};

class ImageDecoder {
 public:
  virtual ~ImageDecoder() = default;
  // Reads the image size from the header without decoding pixels.
  virtual Result<ImageSize> probe(FileBytes file) = 0;
  // Decodes the whole image into `rgb` (CV_8UC3), reusing its buffer when the size
  // is the same.
  virtual Status decode(FileBytes file, cv::Mat& rgb) = 0;
  // Decodes at least `region` (in image coordinates) into `buffer`'s memory (see
  // reuse_pixels) and points `window`
  // at the region's pixels in it. A decoder may decode at a reduced scale, never one
  // that leaves the region smaller than min_side on either side (unless it was already).
  // This default decodes the whole image at full scale.
  virtual Status decode_region(FileBytes file, const Region& region, int min_side, cv::Mat& buffer,
                               cv::Mat& window);
};

// A rows x cols image of `type` over `storage`'s memory, which grows to the largest
// request and never shrinks: decoding images of varying sizes allocates nothing once
// it has grown (and faults in no fresh pages). The image is valid until the next call
// with the same storage.
cv::Mat reuse_pixels(cv::Mat& storage, int rows, int cols, int type = CV_8UC3);

// The pixels of `region` scaled by `scale`, relative to `origin`, rounded to whole
// pixels and clamped to `bounds`; at least 1 x 1.
cv::Rect pixel_rect(const Region& region, double scale, cv::Point origin, cv::Size bounds);

// A decoder that ran out of memory says nothing against the file: ResourceExhausted,
// which is never skipped. Any other failure is the file's: BadData "<what>: <detail>".
Status decode_failure(bool out_of_memory, std::string_view what, std::string_view detail);

std::unique_ptr<ImageDecoder> make_jpeg_decoder();
std::unique_ptr<ImageDecoder> make_opencv_decoder();

// Picks the decoder by content (not by file name) and enforces max_pixels before any
// pixel is decoded where the header allows it. Errors say what is wrong with the file;
// the caller adds its path.
class ImageDecoders {
 public:
  explicit ImageDecoders(DecodePath path = DecodePath::kFused);

  // The decoder for the file's content, and the size its header declares (0 x 0 when
  // the format does not say cheaply), refused when over max_pixels.
  struct Choice {
    ImageDecoder* decoder;
    ImageSize size;
  };
  Result<Choice> choose(FileBytes file, std::uint64_t max_pixels);
  // Decodes the whole image; max_pixels is checked before decoding where the header
  // allows, after it otherwise.
  Status decode(FileBytes file, std::uint64_t max_pixels, cv::Mat& rgb);

 private:
  std::unique_ptr<ImageDecoder> jpeg_;
  std::unique_ptr<ImageDecoder> other_;
};

}  // namespace forkfeed
