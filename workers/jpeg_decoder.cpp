// JPEG through libjpeg-turbo's libjpeg API, straight into an RGB buffer: the whole image,
// or only a region at a reduced DCT scale (the fused path). libjpeg reports
// fatal errors through error_exit, which must not return: we longjmp back to the call
// and turn the message into a Status, so a corrupt file never takes the worker down.
// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <string>
#include <vector>

#include "workers/image_decoder.h"

namespace forkfeed {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // must be first: libjpeg sees only this part
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;  // libjpeg filled missing data with gray; torchvision (PIL) refuses such files
};

void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
}

// OpenCV's Adobe CMYK to RGB, so both decoders agree on CMYK files.
void cmyk_to_rgb(const unsigned char* cmyk, unsigned char* rgb, int width) {
  for (int i = 0; i < width; ++i, cmyk += 4, rgb += 3) {
    const int k = cmyk[3];
    rgb[0] = static_cast<unsigned char>(k - ((255 - cmyk[0]) * k >> 8));
    rgb[1] = static_cast<unsigned char>(k - ((255 - cmyk[1]) * k >> 8));
    rgb[2] = static_cast<unsigned char>(k - ((255 - cmyk[2]) * k >> 8));
  }
}

// A file whose last bytes are the EOI marker has all its entropy-coded data (FF D9
// cannot occur inside it: libjpeg stuffs every FF there), so a region decode may stop
// early; any other file is decoded to the end to find out whether it is truncated.
bool ends_with_eoi(FileBytes file) {
  return file.size() >= 2 && file[file.size() - 2] == std::byte{0xFF} &&
         file[file.size() - 1] == std::byte{0xD9};
}

// The coarsest DCT scale 1/d that keeps `region` at least min_side on both sides.
unsigned int scale_denominator(const Region& region, int min_side) {
  for (unsigned int d : {8u, 4u, 2u}) {
    if (region.width / d >= min_side && region.height / d >= min_side) return d;
  }
  return 1;
}

class JpegDecoder final : public ImageDecoder {
 public:
  static constexpr int kContext = 2;  // a chroma sample at 2x horizontal subsampling

  JpegDecoder() {
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = on_error_exit;
    err_.pub.emit_message = on_message;
    jpeg_create_decompress(&cinfo_);
  }
  ~JpegDecoder() override { jpeg_destroy_decompress(&cinfo_); }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  Result<ImageSize> probe(FileBytes file) override {
    if (setjmp(err_.jump)) return fail();
    start(file);
    const ImageSize size{static_cast<int>(cinfo_.image_width), static_cast<int>(cinfo_.image_height)};
    jpeg_abort_decompress(&cinfo_);
    return size;
  }

  Status decode(FileBytes file, cv::Mat& rgb) override {
    if (setjmp(err_.jump)) return fail();
    start(file);
    jpeg_start_decompress(&cinfo_);
    rgb.create(static_cast<int>(cinfo_.output_height), static_cast<int>(cinfo_.output_width), CV_8UC3);
    read_rows(rgb);
    jpeg_finish_decompress(&cinfo_);
    return truncated() ? truncated_error() : Status::Ok();
  }

  // Decodes only the rows and the column band of the region (jpeg_skip_scanlines,
  // jpeg_crop_scanline), at the coarsest DCT scale that keeps it min_side or more.
  Status decode_region(FileBytes file, const Region& region, int min_side, cv::Mat& buffer,
                       cv::Mat& window) override {
    if (setjmp(err_.jump)) return fail();
    start(file);
    const unsigned int denominator = scale_denominator(region, min_side);
    cinfo_.scale_num = 1;
    cinfo_.scale_denom = denominator;
    jpeg_start_decompress(&cinfo_);
    const cv::Rect want =
        pixel_rect(region, 1.0 / denominator, {0, 0},
                   {static_cast<int>(cinfo_.output_width), static_cast<int>(cinfo_.output_height)});
    // The band starts at an iMCU boundary at or left of want.x and covers want, with
    // kContext more columns each side: the band's edge columns lack their neighbours for
    // chroma upsampling, so they may differ from a full decode.
    const int left = std::max(want.x - kContext, 0);
    const int right = std::min(want.x + want.width + kContext, static_cast<int>(cinfo_.output_width));
    auto band_x = static_cast<JDIMENSION>(left), band_width = static_cast<JDIMENSION>(right - left);
    jpeg_crop_scanline(&cinfo_, &band_x, &band_width);
    if (want.y > 0) jpeg_skip_scanlines(&cinfo_, static_cast<JDIMENSION>(want.y));
    const cv::Mat band = reuse_pixels(buffer, want.height, static_cast<int>(band_width));
    read_rows(band);
    if (ends_with_eoi(file)) {
      jpeg_abort_decompress(&cinfo_);
    } else {
      if (cinfo_.output_scanline < cinfo_.output_height) {  // skipping to the very end reads no data
        jpeg_skip_scanlines(&cinfo_, cinfo_.output_height - 1 - cinfo_.output_scanline);
        read_rows(reuse_pixels(last_row_, 1, static_cast<int>(cinfo_.output_width)));
      }
      jpeg_finish_decompress(&cinfo_);
      if (truncated()) return truncated_error();
    }
    window = band(cv::Rect(want.x - static_cast<int>(band_x), 0, want.width, want.height));
    return Status::Ok();
  }

 private:
  // Reads the header and chooses the output colour space: RGB, or CMYK converted here
  // (grayscale is expanded by libjpeg-turbo).
  void start(FileBytes file) {
    err_.truncated = false;
    jpeg_mem_src(&cinfo_, reinterpret_cast<const unsigned char*>(file.data()), file.size());
    jpeg_read_header(&cinfo_, TRUE);
    cmyk_ = cinfo_.jpeg_color_space == JCS_CMYK || cinfo_.jpeg_color_space == JCS_YCCK;
    cinfo_.out_color_space = cmyk_ ? JCS_CMYK : JCS_RGB;
  }

  // Reads the next out.rows scanlines into `out` (CV_8UC3, output_width wide).
  void read_rows(const cv::Mat& out) {
    const int width = static_cast<int>(cinfo_.output_width);
    if (cmyk_) cmyk_row_.resize(static_cast<std::size_t>(width) * 4);
    for (int y = 0; y < out.rows; ++y) {
      auto* rgb = const_cast<unsigned char*>(out.ptr<unsigned char>(y));
      JSAMPROW row = cmyk_ ? cmyk_row_.data() : rgb;
      jpeg_read_scanlines(&cinfo_, &row, 1);
      if (cmyk_) cmyk_to_rgb(cmyk_row_.data(), rgb, width);
    }
  }

  bool truncated() const { return err_.truncated; }
  static Status truncated_error() { return Status::BadData("truncated JPEG (premature end of data)"); }

  Status fail() {
    jpeg_abort_decompress(&cinfo_);
    return decode_failure(err_.pub.msg_code == JERR_OUT_OF_MEMORY, "corrupt JPEG", err_.message);
  }

  jpeg_decompress_struct cinfo_{};
  ErrorManager err_{};
  bool cmyk_ = false;
  std::vector<unsigned char> cmyk_row_;
  cv::Mat last_row_;  // decode_region(): the last row, read to detect truncation
};

}  // namespace

std::unique_ptr<ImageDecoder> make_jpeg_decoder() { return std::make_unique<JpegDecoder>(); }

}  // namespace forkfeed
