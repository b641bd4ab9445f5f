// The OpenCV decoder and the dispatch between decoders.
#include "workers/image_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <utility>

#include "workers/image_codecs.h"

namespace forkfeed {
namespace {

bool is_jpeg(FileBytes f) {
  return f.size() >= 3 && f[0] == std::byte{0xFF} && f[1] == std::byte{0xD8} && f[2] == std::byte{0xFF};
}

std::uint32_t read_be32(const std::byte* p) {
  return (std::to_integer<std::uint32_t>(p[0]) << 24) | (std::to_integer<std::uint32_t>(p[1]) << 16) |
         (std::to_integer<std::uint32_t>(p[2]) << 8) | std::to_integer<std::uint32_t>(p[3]);
}

std::string too_large(std::uint64_t w, std::uint64_t h, std::uint64_t max_pixels) {
  return "image too large: " + std::to_string(w) + "x" + std::to_string(h) + " = " + std::to_string(w * h) +
         " pixels > max_pixels " + std::to_string(max_pixels);
}

bool is_png(FileBytes f) {
  static constexpr unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return f.size() >= 26 && std::memcmp(f.data(), kPng, 8) == 0;  // IHDR is always first
}

// torchvision's loader, PIL's convert("RGB"), clips a 16-bit grey PNG (PIL's mode "I") to
// 255 where OpenCV would scale it (v >> 8); 16-bit colour and grey+alpha PNGs PIL scales
// by their high byte, as OpenCV does. (PIL clips a 16-bit grey TIFF too; that one, whose
// depth only its IFDs say, is left to OpenCV, as docs/datasets.md says.)
bool clipped_by_pil(FileBytes f) {
  constexpr int kGrey = 0;  // IHDR's colour type: no colour, no alpha
  return is_png(f) && std::to_integer<int>(f[24]) == 16 && std::to_integer<int>(f[25]) == kGrey;
}

class OpenCvDecoder final : public ImageDecoder {
 public:
  Result<ImageSize> probe(FileBytes f) override {
    if (is_png(f))
      return ImageSize{static_cast<int>(read_be32(f.data() + 16)),
                       static_cast<int>(read_be32(f.data() + 20))};
    return ImageSize{};
  }

  Status decode(FileBytes f, cv::Mat& rgb) override {
    const cv::Mat raw(1, static_cast<int>(f.size()), CV_8U, const_cast<std::byte*>(f.data()));
    const bool clip = clipped_by_pil(f);
    const int flags = clip ? cv::IMREAD_GRAYSCALE | cv::IMREAD_ANYDEPTH : cv::IMREAD_COLOR;
    cv::Mat decoded;
    try {
      Result<cv::Mat> d = image_codecs::decode(raw, flags | cv::IMREAD_IGNORE_ORIENTATION);
      if (!d.ok()) return d.status();
      decoded = std::move(d).value();
      if (clip) decoded.convertTo(decoded, CV_8U);  // saturating: above 255 is 255
    } catch (const cv::Exception& e) {
      return decode_failure(e.code == cv::Error::StsNoMem, "cannot decode image", e.what());
    }
    if (decoded.empty())
      return Status::BadData("not an image OpenCV can decode (unknown format or corrupt data)");
    cv::cvtColor(decoded, rgb, clip ? cv::COLOR_GRAY2RGB : cv::COLOR_BGR2RGB);
    return Status::Ok();
  }
};

}  // namespace

Status decode_failure(bool out_of_memory, std::string_view what, std::string_view detail) {
  std::string message = std::string(what) + ": " + std::string(detail);
  if (out_of_memory) {
    return Status::ResourceExhausted(message + " (out of memory: the machine's fault, not the file's)");
  }
  return Status::BadData(std::move(message));
}

cv::Mat reuse_pixels(cv::Mat& storage, int rows, int cols, int type) {
  const std::size_t bytes = static_cast<std::size_t>(rows) * cols * CV_ELEM_SIZE(type);
  if (storage.empty() || storage.total() * storage.elemSize() < bytes)
    storage.create(1, static_cast<int>(bytes), CV_8U);
  return cv::Mat(rows, cols, type, storage.data);
}

cv::Rect pixel_rect(const Region& region, double scale, cv::Point origin, cv::Size bounds) {
  const int x0 = std::clamp(static_cast<int>(std::lround(region.x * scale)) - origin.x, 0, bounds.width - 1);
  const int y0 = std::clamp(static_cast<int>(std::lround(region.y * scale)) - origin.y, 0, bounds.height - 1);
  const int x1 = std::clamp(static_cast<int>(std::lround((region.x + region.width) * scale)) - origin.x,
                            x0 + 1, bounds.width);
  const int y1 = std::clamp(static_cast<int>(std::lround((region.y + region.height) * scale)) - origin.y,
                            y0 + 1, bounds.height);
  return {x0, y0, x1 - x0, y1 - y0};
}

Status ImageDecoder::decode_region(FileBytes file, const Region& region, int, cv::Mat& buffer,
                                   cv::Mat& window) {
  if (Status s = decode(file, buffer); !s.ok()) return s;
  window = buffer(pixel_rect(region, 1.0, {0, 0}, buffer.size()));
  return Status::Ok();
}

std::unique_ptr<ImageDecoder> make_opencv_decoder() { return std::make_unique<OpenCvDecoder>(); }

ImageDecoders::ImageDecoders(DecodePath path)
    : jpeg_(path == DecodePath::kFused ? make_jpeg_decoder() : make_opencv_decoder()),
      other_(make_opencv_decoder()) {}

Result<ImageDecoders::Choice> ImageDecoders::choose(FileBytes file, std::uint64_t max_pixels) {
  if (file.empty()) return Status::BadData("empty file (0 bytes)");
  ImageDecoder* decoder = is_jpeg(file) ? jpeg_.get() : other_.get();
  auto size = decoder->probe(file);
  if (!size.ok()) return size.status();
  const auto declared = static_cast<std::uint64_t>(size->width) * static_cast<std::uint64_t>(size->height);
  if (declared > max_pixels) return Status::BadData(too_large(size->width, size->height, max_pixels));
  return Choice{decoder, *size};
}

Status ImageDecoders::decode(FileBytes file, std::uint64_t max_pixels, cv::Mat& rgb) {
  auto choice = choose(file, max_pixels);
  if (!choice.ok()) return choice.status();
  if (Status s = choice->decoder->decode(file, rgb); !s.ok()) return s;
  if (rgb.total() > max_pixels) return Status::BadData(too_large(rgb.cols, rgb.rows, max_pixels));
  return Status::Ok();
}

}  // namespace forkfeed
