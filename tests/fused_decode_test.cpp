// The fused path — decode only the sample's window, at the coarsest DCT scale that
// keeps it at least the output size — gives what the reference full decode gives.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "testing/encoded_images.h"
#include "testing/temp_dataset.h"
#include "workers/fused_decode.h"
#include "workers/image_decoder.h"
#include "workers/sample_pipeline.h"

namespace forkfeed {
namespace {

using testing::encode;

constexpr std::uint64_t kNoLimit = 1ull << 40;

struct Jpeg {
  std::string name;
  std::vector<std::byte> bytes;
};

// Every kind of JPEG the fused path must handle, at sizes from below the output size
// to several times it.
std::vector<Jpeg> jpegs() {
  std::vector<Jpeg> out;
  const std::vector<std::pair<int, int>> sizes = {
      {640, 480}, {333, 500}, {1200, 900}, {180, 120}, {2000, 1333}};
  for (const auto& [w, h] : sizes) {
    const cv::Mat img = testing::photo(w, h, w + h);
    cv::Mat gray;
    cv::cvtColor(img, gray, cv::COLOR_BGR2GRAY);
    const std::string size = std::to_string(w) + "x" + std::to_string(h);
    out.push_back({size + " 4:2:0", encode(img, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90})});
    out.push_back({size + " 4:4:4", testing::jpeg_444(img, 90)});
    out.push_back({size + " grayscale", encode(gray, ".jpg")});
    out.push_back({size + " progressive", encode(img, ".jpg", {cv::IMWRITE_JPEG_PROGRESSIVE, 1})});
    out.push_back({size + " CMYK", testing::cmyk_jpeg(w, h)});
  }
  return out;
}

// `transform`: "train", "eval" or a pipeline that makes size x size samples.
TransformSpec spec(const std::string& transform, std::uint32_t size) {
  TransformSpec t{};
  std::strcpy(t.pipeline, transform.c_str());
  t.dtype = DType::kUint8;
  t.size = size;
  t.seed = 11;
  t.max_pixels = kNoLimit;
  t.max_file_bytes = kNoLimit;
  return t;
}

double mean_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return sum / static_cast<double>(a.size());
}

// Runs both paths over every file (train: 3 samples each, so 3 crops) and checks the
// mean absolute difference over the whole batch, and of each file against a looser
// bound: DCT scaling is not area averaging, and heavy texture shows it most.
void expect_close(const std::string& transform, std::uint32_t size) {
  constexpr double kBatchTolerance = 2.0, kFileTolerance = 3.0;
  testing::TempDir dir;
  SamplePipeline fused(spec(transform, size), DecodePath::kFused),
      reference(spec(transform, size), DecodePath::kOpenCv);
  const std::size_t bytes = sample_bytes(DType::kUint8, size);
  const std::uint64_t samples = transform == "eval" ? 1 : 3;
  double sum = 0, worst = 0;
  std::string worst_name;
  const auto files = jpegs();
  for (const Jpeg& jpeg : files) {
    const std::string path = dir.path() + "/image.jpg";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(jpeg.bytes.data()),
               static_cast<std::streamsize>(jpeg.bytes.size()));
    std::vector<std::uint8_t> a(bytes * samples), b(bytes * samples);
    for (std::uint64_t i = 0; i < samples; ++i) {
      const Status s = fused.run(path, 0, i, reinterpret_cast<std::byte*>(a.data() + i * bytes));
      ASSERT_TRUE(s.ok()) << jpeg.name << ": " << s.message();
      ASSERT_TRUE(reference.run(path, 0, i, reinterpret_cast<std::byte*>(b.data() + i * bytes)).ok());
    }
    const double diff = mean_abs_diff(a, b);
    EXPECT_LE(diff, kFileTolerance) << jpeg.name;
    sum += diff;
    if (diff > worst) worst = diff, worst_name = jpeg.name;
  }
  const double batch = sum / static_cast<double>(files.size());
  EXPECT_LE(batch, kBatchTolerance);
  std::printf("%s %u: mean |fused - full decode| over the batch %.2f levels, worst file %.2f (%s)\n",
              transform.c_str(), size, batch, worst, worst_name.c_str());
}

TEST(FusedDecode, EvalMatchesFullDecodeWithinTwoLevels) {
  expect_close("eval", 224);
  expect_close("eval", 64);
}

TEST(FusedDecode, TrainMatchesFullDecodeWithinTwoLevels) {
  expect_close("train", 224);
  expect_close("train", 64);
}

// RandomCrop's padding: the fused path resizes the part of the image that shows into its
// rectangle of the sample and fills the rest, as the reference pads the resized image.
TEST(FusedDecode, PaddedCropsMatchFullDecodeWithinTwoLevels) {
  expect_close("RandomResize(100, 400), RandomCrop(224, pad_if_needed=True, fill=(10, 20, 250))", 224);
  expect_close("RandomCrop(1000, padding=30, pad_if_needed=True, fill=128)", 1000);
  expect_close("Resize(48), RandomCrop(64, padding=(40, 0, 0, 50))", 64);
  // Padding, then the resize: the image's edge on the nearest output pixel.
  expect_close("RandomCrop(600, padding=(200, 30, 10, 300), pad_if_needed=True, fill=99), Resize((224, 224))",
               224);
  // SSD's zoom-out, then its resize.
  expect_close("RandomZoomOut(fill=(123, 117, 104), side_range=(1.0, 3.0), p=0.9), Resize((300, 300))", 300);
}
// At full scale the window is exactly the crop box of the full decode, pixel for pixel:
// the fused path reads the box the reference crops, and never outside the image.
TEST(FusedDecode, FullScaleWindowIsExactlyTheBox) {
  ImageDecoders decoders;
  for (const Jpeg& jpeg : jpegs()) {
    cv::Mat full, buffer, window;
    ASSERT_TRUE(decoders.decode(jpeg.bytes, kNoLimit, full).ok()) << jpeg.name;
    auto choice = decoders.choose(jpeg.bytes, kNoLimit);
    ASSERT_TRUE(choice.ok());
    const int w = full.cols, h = full.rows;
    const std::vector<cv::Rect> boxes = {{0, 0, w, h},           {0, 0, 1, 1},
                                         {w - 1, h - 1, 1, 1},   {w / 3, h / 5, w / 2, h / 3},
                                         {w - 37, 3, 37, h - 3}, {5, h - 20, w - 5, 20}};
    for (const cv::Rect& box : boxes) {
      const Region region{double(box.x), double(box.y), double(box.width), double(box.height)};
      const Status s = choice->decoder->decode_region(jpeg.bytes, region, 1 << 20, buffer, window);
      ASSERT_TRUE(s.ok()) << jpeg.name << ": " << s.message();
      ASSERT_EQ(window.size(), box.size()) << jpeg.name;
      cv::Mat diff;
      cv::absdiff(window, full(box), diff);
      EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0) << jpeg.name << " box " << box;
    }
  }
}

// A DCT-scaled window keeps at least min_side pixels a side and stays inside the image,
// for windows at every edge.
TEST(FusedDecode, ScaledWindowStaysInsideAndLargeEnough) {
  ImageDecoders decoders;
  const auto file = encode(testing::photo(1601, 1203, 3), ".jpg");
  auto choice = decoders.choose(file, kNoLimit);
  ASSERT_TRUE(choice.ok());
  cv::Mat buffer, window;
  const std::vector<Region> regions = {{0, 0, 1601, 1203},
                                       {1601 - 900, 1203 - 900, 900, 900},
                                       {0, 1203 - 230, 230, 230},
                                       {1000.5, 0, 600.5, 450.25}};
  for (const Region& r : regions) {
    ASSERT_TRUE(choice->decoder->decode_region(file, r, 224, buffer, window).ok());
    EXPECT_GE(window.cols, 224);
    EXPECT_GE(window.rows, 224);
    const double scale = double(window.cols) / r.width;
    EXPECT_NEAR(double(window.rows) / r.height, scale, 0.02) << "aspect ratio kept";
    cv::Size whole;
    cv::Point at;
    window.locateROI(whole, at);
    EXPECT_LE(at.x + window.cols, whole.width);
    EXPECT_LE(at.y + window.rows, whole.height);
  }
  // Scaled 1/4: a 900-pixel region comes out at 225.
  ASSERT_TRUE(choice->decoder->decode_region(file, regions[1], 224, buffer, window).ok());
  EXPECT_EQ(window.cols, 225);
}

// The hot path allocates nothing once its buffer has grown to the largest window.
TEST(FusedDecode, RegionBufferIsReused) {
  ImageDecoders decoders;
  const auto big = encode(testing::photo(900, 700, 5), ".jpg"),
             small = encode(testing::photo(300, 200, 6), ".jpg");
  cv::Mat buffer, window;
  ASSERT_TRUE(decoders.choose(big, kNoLimit)
                  ->decoder->decode_region(big, {0, 0, 900, 700}, 800, buffer, window)
                  .ok());
  const uchar* memory = buffer.data;
  for (const auto* file : {&small, &big, &small}) {
    auto choice = decoders.choose(*file, kNoLimit);
    ASSERT_TRUE(choice->decoder->decode_region(*file, {10, 20, 150, 100}, 64, buffer, window).ok());
    EXPECT_EQ(buffer.data, memory);
    EXPECT_GE(window.data, memory);
  }
}

TEST(FusedDecode, TruncatedIsAnErrorEvenWhenTheWindowIsDecodedBeforeTheCut) {
  ImageDecoders decoders;
  const auto jpeg = encode(testing::photo(800, 600, 4), ".jpg");
  const std::vector<std::byte> truncated(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() * 3 / 4));
  auto choice = decoders.choose(truncated, kNoLimit);
  ASSERT_TRUE(choice.ok()) << "the header is intact";
  cv::Mat buffer, window;
  for (const Region& r : {Region{0, 0, 300, 200}, Region{0, 0, 800, 600}, Region{500, 400, 300, 200}}) {
    const Status s = choice->decoder->decode_region(truncated, r, 64, buffer, window);
    EXPECT_EQ(s.code(), Status::Code::kBadData);
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  }

  std::vector<std::byte> trailing = jpeg;  // bytes after EOI, as some cameras write
  trailing.resize(trailing.size() + 100, std::byte{0});
  EXPECT_TRUE(choice->decoder->decode_region(trailing, {0, 0, 300, 200}, 64, buffer, window).ok());
  EXPECT_TRUE(choice->decoder->decode_region(jpeg, {0, 0, 300, 200}, 64, buffer, window).ok());
}

}  // namespace
}  // namespace forkfeed
