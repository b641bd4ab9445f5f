// JPEG through libjpeg-turbo's libjpeg API, straight into an RGB buffer. libjpeg reports
// fatal errors through error_exit, which must not return: we longjmp back to the call
// and turn the message into a Status, so a corrupt file never takes the worker down.
// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

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

class JpegDecoder final : public ImageDecoder {
 public:
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
    const bool cmyk = cinfo_.jpeg_color_space == JCS_CMYK || cinfo_.jpeg_color_space == JCS_YCCK;
    cinfo_.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&cinfo_);
    const int width = static_cast<int>(cinfo_.output_width);
    rgb.create(static_cast<int>(cinfo_.output_height), width, CV_8UC3);
    if (cmyk) cmyk_row_.resize(static_cast<std::size_t>(width) * 4);
    while (cinfo_.output_scanline < cinfo_.output_height) {
      unsigned char* out = rgb.ptr<unsigned char>(static_cast<int>(cinfo_.output_scanline));
      JSAMPROW row = cmyk ? cmyk_row_.data() : out;
      jpeg_read_scanlines(&cinfo_, &row, 1);
      if (cmyk) cmyk_to_rgb(cmyk_row_.data(), out, width);
    }
    jpeg_finish_decompress(&cinfo_);
    if (err_.truncated) return Status::BadData("truncated JPEG (premature end of data)");
    return Status::Ok();
  }

 private:
  void start(FileBytes file) {
    err_.truncated = false;
    jpeg_mem_src(&cinfo_, reinterpret_cast<const unsigned char*>(file.data()), file.size());
    jpeg_read_header(&cinfo_, TRUE);
  }

  Status fail() {
    jpeg_abort_decompress(&cinfo_);
    return Status::BadData(std::string("corrupt JPEG: ") + err_.message);
  }

  jpeg_decompress_struct cinfo_{};
  ErrorManager err_{};
  std::vector<unsigned char> cmyk_row_;
};

}  // namespace

std::unique_ptr<ImageDecoder> make_jpeg_decoder() { return std::make_unique<JpegDecoder>(); }

}  // namespace forkfeed
