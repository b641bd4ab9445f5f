// Encoded test images made in memory.
#include "tests/testing/encoded_images.h"

#include <gtest/gtest.h>

// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <cstdlib>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "workers/image_codecs.h"

namespace forkfeed::testing {

cv::Mat photo(int w, int h, int seed) {
  cv::Mat img(h, w, CV_8UC3);
  cv::RNG rng(seed);
  rng.fill(img, cv::RNG::UNIFORM, 0, 255);
  cv::GaussianBlur(img, img, cv::Size(9, 9), 3);
  cv::circle(img, {w / 3, h / 2}, w / 5, {20, 200, 90}, -1);
  return img;
}

std::vector<std::byte> encode(const cv::Mat& img, const std::string& ext, const std::vector<int>& params) {
  std::vector<uchar> buf;
  const Result<bool> encoded = image_codecs::encode(ext, img, buf, params);
  EXPECT_TRUE(encoded.ok() && *encoded) << (encoded.ok() ? "" : encoded.status().message());
  const auto* p = reinterpret_cast<const std::byte*>(buf.data());
  return {p, p + buf.size()};
}

cv::Mat opencv_rgb(const std::vector<std::byte>& file) {
  cv::Mat raw(1, static_cast<int>(file.size()), CV_8U, const_cast<std::byte*>(file.data()));
  const Result<cv::Mat> decoded = image_codecs::decode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  EXPECT_TRUE(decoded.ok()) << decoded.status().message();
  cv::Mat bgr = decoded.ok() ? *decoded : cv::Mat(), rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

namespace {

// Compresses `rows` (each `components` bytes per pixel in `space`) with libjpeg; `setup`
// adjusts the parameters after jpeg_set_defaults.
template <typename Row, typename Setup>
std::vector<std::byte> libjpeg_encode(int w, int h, int components, J_COLOR_SPACE space, Row row_of,
                                      Setup setup) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = components;
  c.in_color_space = space;
  jpeg_set_defaults(&c);
  setup(c);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(static_cast<std::size_t>(w) * components);
  while (c.next_scanline < c.image_height) {
    row_of(static_cast<int>(c.next_scanline), row.data());
    JSAMPROW p = row.data();
    jpeg_write_scanlines(&c, &p, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<std::byte> file(reinterpret_cast<std::byte*>(out), reinterpret_cast<std::byte*>(out) + size);
  free(out);
  return file;
}

}  // namespace

std::vector<std::byte> jpeg_444(const cv::Mat& img, int quality) {
  cv::Mat rgb;
  cv::cvtColor(img, rgb, cv::COLOR_BGR2RGB);
  return libjpeg_encode(
      rgb.cols, rgb.rows, 3, JCS_RGB,
      [&](int y, unsigned char* row) { std::copy_n(rgb.ptr<unsigned char>(y), rgb.cols * 3, row); },
      [&](jpeg_compress_struct& c) {
        jpeg_set_quality(&c, quality, TRUE);
        c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
      });
}

std::vector<std::byte> cmyk_jpeg(int w, int h) {
  return libjpeg_encode(
      w, h, 4, JCS_CMYK,
      [&](int y, unsigned char* row) {
        for (int x = 0; x < w; ++x) {
          row[x * 4 + 0] = static_cast<unsigned char>(x * 255 / w);
          row[x * 4 + 1] = static_cast<unsigned char>(y * 255 / h);
          row[x * 4 + 2] = 128;
          row[x * 4 + 3] = 200;
        }
      },
      [](jpeg_compress_struct& c) { jpeg_set_quality(&c, 95, TRUE); });
}

}  // namespace forkfeed::testing
