// Decoders: libjpeg-turbo and OpenCV agree; bad files are errors, never crashes.
#include "workers/image_decoder.h"

#include <gtest/gtest.h>

// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

namespace forkfeed {
namespace {

cv::Mat photo(int w, int h, int seed) {
  cv::Mat img(h, w, CV_8UC3);
  cv::RNG rng(seed);
  rng.fill(img, cv::RNG::UNIFORM, 0, 255);
  cv::GaussianBlur(img, img, cv::Size(9, 9), 3);
  cv::circle(img, {w / 3, h / 2}, w / 5, {20, 200, 90}, -1);
  return img;
}

std::vector<std::byte> encode(const cv::Mat& img, const std::string& ext, std::vector<int> params = {}) {
  std::vector<uchar> buf;
  EXPECT_TRUE(cv::imencode(ext, img, buf, params));
  const auto* p = reinterpret_cast<const std::byte*>(buf.data());
  return {p, p + buf.size()};
}

cv::Mat opencv_rgb(const std::vector<std::byte>& file) {
  cv::Mat raw(1, static_cast<int>(file.size()), CV_8U, const_cast<std::byte*>(file.data()));
  cv::Mat bgr = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION), rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

double max_diff(const cv::Mat& a, const cv::Mat& b) {
  double m = 0;
  cv::minMaxLoc(cv::abs(a - b) + cv::abs(b - a), nullptr, &m);
  return m;
}

// A CMYK JPEG as Photoshop writes it (Adobe marker, inverted), made with libjpeg.
std::vector<std::byte> cmyk_jpeg(int w, int h) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(w * 4);
  while (c.next_scanline < c.image_height) {
    for (int x = 0; x < w; ++x) {
      row[x * 4 + 0] = static_cast<unsigned char>(x * 255 / w);
      row[x * 4 + 1] = static_cast<unsigned char>(c.next_scanline * 255 / h);
      row[x * 4 + 2] = 128;
      row[x * 4 + 3] = 200;
    }
    JSAMPROW p = row.data();
    jpeg_write_scanlines(&c, &p, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<std::byte> file(reinterpret_cast<std::byte*>(out), reinterpret_cast<std::byte*>(out) + size);
  free(out);
  return file;
}

constexpr std::uint64_t kNoLimit = 1ull << 40;

TEST(ImageDecoders, JpegMatchesOpenCvExactly) {
  ImageDecoders decoders;
  const cv::Mat img = photo(123, 77, 1);
  cv::Mat gray;
  cv::cvtColor(img, gray, cv::COLOR_BGR2GRAY);
  const std::vector<std::vector<std::byte>> files = {
      encode(img, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90}),
      encode(img, ".jpg", {cv::IMWRITE_JPEG_PROGRESSIVE, 1}),
      encode(gray, ".jpg"),
      cmyk_jpeg(64, 48),
  };
  for (const auto& file : files) {
    cv::Mat rgb;
    const Status s = decoders.decode(file, kNoLimit, rgb);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(rgb.type(), CV_8UC3);
    const cv::Mat expected = opencv_rgb(file);
    ASSERT_EQ(rgb.size(), expected.size());
    EXPECT_EQ(max_diff(rgb, expected), 0.0);
  }
}

TEST(ImageDecoders, OtherFormatsThroughOpenCvAsRgb) {
  ImageDecoders decoders;
  const cv::Mat img = photo(50, 40, 2);
  for (const char* ext : {".png", ".bmp", ".ppm"}) {
    cv::Mat rgb;
    ASSERT_TRUE(decoders.decode(encode(img, ext), kNoLimit, rgb).ok()) << ext;
    cv::Mat expected;
    cv::cvtColor(img, expected, cv::COLOR_BGR2RGB);
    EXPECT_EQ(max_diff(rgb, expected), 0.0) << ext << " is lossless";
  }
}

TEST(ImageDecoders, RefusesTooManyPixelsBeforeDecoding) {
  ImageDecoders decoders;
  cv::Mat rgb;
  for (const char* ext : {".jpg", ".png"}) {
    const Status s = decoders.decode(encode(photo(100, 50, 3), ext), 4999, rgb);
    EXPECT_EQ(s.code(), Status::Code::kBadData) << ext;
    EXPECT_NE(s.message().find("image too large: 100x50"), std::string::npos) << s.message();
    EXPECT_TRUE(rgb.empty()) << ext << ": refused before decoding";
  }
  EXPECT_TRUE(decoders.decode(encode(photo(100, 50, 3), ".jpg"), 5000, rgb).ok());
}

TEST(ImageDecoders, BadFilesAreErrorsNotCrashes) {
  ImageDecoders decoders;
  cv::Mat rgb;
  EXPECT_NE(decoders.decode({}, kNoLimit, rgb).message().find("empty file"), std::string::npos);

  auto jpeg = encode(photo(200, 150, 4), ".jpg");
  auto truncated = std::vector<std::byte>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  const Status t = decoders.decode(truncated, kNoLimit, rgb);
  EXPECT_EQ(t.code(), Status::Code::kBadData);
  EXPECT_NE(t.message().find("truncated"), std::string::npos) << t.message();

  auto header_only = std::vector<std::byte>(jpeg.begin(), jpeg.begin() + 40);
  EXPECT_EQ(decoders.decode(header_only, kNoLimit, rgb).code(), Status::Code::kBadData);

  std::vector<std::byte> noise(5000);
  cv::RNG rng(5);
  for (auto& b : noise) b = static_cast<std::byte>(rng.uniform(0, 256));
  EXPECT_EQ(decoders.decode(noise, kNoLimit, rgb).code(), Status::Code::kBadData);
  noise[0] = std::byte{0xFF}, noise[1] = std::byte{0xD8},
  noise[2] = std::byte{0xFF};  // JPEG magic, junk after
  EXPECT_EQ(decoders.decode(noise, kNoLimit, rgb).code(), Status::Code::kBadData);

  // The decoder is still usable after errors.
  EXPECT_TRUE(decoders.decode(jpeg, kNoLimit, rgb).ok());
}

}  // namespace
}  // namespace forkfeed
