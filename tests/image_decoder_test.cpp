// Decoders: libjpeg-turbo and OpenCV agree; bad files are errors, never crashes.
#include "workers/image_decoder.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "testing/encoded_images.h"

namespace forkfeed {
namespace {

using testing::cmyk_jpeg;
using testing::encode;
using testing::opencv_rgb;
using testing::photo;

double max_diff(const cv::Mat& a, const cv::Mat& b) {
  double m = 0;
  cv::minMaxLoc(cv::abs(a - b) + cv::abs(b - a), nullptr, &m);
  return m;
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
