// Makes one synthetic image file: draws its size, paints it, encodes it as JPEG or PNG
// and writes it, turning every failure into a Status a user can act on.
#include "tools/mkdata/image_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "tools/mkdata/painter.h"
#include "tools/mkdata/splitmix64.h"
#include "workers/image_codecs.h"

namespace forkfeed::mkdata {

namespace fs = std::filesystem;

namespace {

// One independent stream per image, so an image does not depend on the ones before it:
// growing a dataset keeps its first images, and any image can be regenerated alone.
// Draws must happen in a fixed order for byte-identical output on every compiler: never
// two draws as arguments of one call (unspecified order); braced lists are ordered.
cv::RNG image_rng(std::uint64_t seed, std::uint32_t index) {
  return cv::RNG(splitmix64(splitmix64(seed) ^ index));
}

// Shorter side uniform in [min_side, max_side]; aspect between 1 and 4:3, either way up.
cv::Size image_size(cv::RNG& rng, const SyntheticDatasetSpec& spec) {
  const int short_side = rng.uniform(static_cast<int>(spec.min_side), static_cast<int>(spec.max_side) + 1);
  const double aspect = rng.uniform(1.0, 4.0 / 3.0);
  // floor keeps long/short <= 4/3 exactly.
  const int long_side = std::max(short_side, static_cast<int>(std::floor(short_side * aspect)));
  return rng.uniform(0, 2) == 0 ? cv::Size(long_side, short_side) : cv::Size(short_side, long_side);
}

Status encode(cv::RNG& rng, ImageFormat format, const cv::Mat3b& pixels, std::vector<uchar>& bytes) {
  const int quality = rng.uniform(75, 96);
  cv::Mat image = pixels;
  std::vector<int> params{cv::IMWRITE_JPEG_QUALITY, quality};
  const char* ext = ".jpg";
  switch (format) {
    case ImageFormat::kBaselineJpeg: break;
    case ImageFormat::kGrayJpeg:
      cv::cvtColor(pixels, image, cv::COLOR_BGR2GRAY);  // a one-component JPEG
      break;
    case ImageFormat::kProgressiveJpeg: params.insert(params.end(), {cv::IMWRITE_JPEG_PROGRESSIVE, 1}); break;
    case ImageFormat::kPng:
      ext = ".png";
      // zlib's fastest level: higher ones cost 2-5x the time for under 10% on noisy pixels.
      params = {cv::IMWRITE_PNG_COMPRESSION, 1};
      break;
  }
  const Result<bool> encoded = image_codecs::encode(ext, image, bytes, params);
  if (!encoded.ok()) return encoded.status();
  if (!*encoded) {
    return Status::Internal(std::string("OpenCV could not encode a ") + ext +
                            " image; check that its imgcodecs module was built with JPEG and PNG support");
  }
  return Status::Ok();
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

Status write_error(const fs::path& path, int err) {
  return Status::IoError("cannot write " + path.string() + ": " + std::generic_category().message(err) +
                         "; check that the folder is writable and the disk has space");
}

Status write_file(const fs::path& path, const std::vector<uchar>& bytes) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) return write_error(path, errno);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size()) return write_error(path, errno);
  // fclose flushes: its failure (ENOSPC, EIO) is a failed write too.
  if (std::fclose(file.release()) != 0) return write_error(path, errno);
  return Status::Ok();
}

}  // namespace

cv::Size image_size_of(const SyntheticDatasetSpec& spec, std::uint32_t index) {
  cv::RNG rng = image_rng(spec.seed, index);
  return image_size(rng, spec);
}

Status write_image(const SyntheticDatasetSpec& spec, std::uint32_t index, const fs::path& path,
                   ImageFormat format) {
  try {
    cv::RNG rng = image_rng(spec.seed, index);
    const cv::Mat3b pixels = paint_image(rng, image_size(rng, spec));
    std::vector<uchar> bytes;
    if (Status s = encode(rng, format, pixels, bytes); !s.ok()) return s;
    return write_file(path, bytes);
  } catch (const std::exception& e) {  // cv::Exception, bad_alloc: stop them at the API edge
    return Status::Internal("could not make synthetic image " + path.string() + ": " + e.what());
  }
}

}  // namespace forkfeed::mkdata
