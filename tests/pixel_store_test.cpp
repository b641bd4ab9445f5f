// PixelStore: every dtype, layout and mirror against a plain reference (OpenCV's flip
// and split, then (x / 255 - mean) / std in double), at sizes that leave every vector
// tail, from contiguous and strided (ROI) images, never writing past the sample.
#include "workers/pixel_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <opencv2/core.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "workers/fused_decode.h"

namespace forkfeed {
namespace {

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
constexpr std::byte kCanary{0xA5};

cv::Mat random_image(int rows, int cols, int seed) {
  cv::Mat m(rows, cols, CV_8UC3);
  cv::RNG rng(static_cast<std::uint64_t>(seed));
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  return m;
}

// Value `k` (in output order) of the reference sample, as a double.
std::vector<double> reference(const cv::Mat& square, DType dtype, Layout layout, bool mirror) {
  cv::Mat image;
  if (mirror) {
    cv::flip(square, image, 1);
  } else {
    image = square.clone();
  }
  std::vector<cv::Mat> planes;
  cv::split(image, planes);
  const auto pixels = static_cast<std::size_t>(image.rows) * image.cols;
  std::vector<double> out(3 * pixels);
  for (int c = 0; c < 3; ++c) {
    for (std::size_t i = 0; i < pixels; ++i) {
      const double x = planes[c].data[i];
      const double v = dtype == DType::kUint8 ? x : (x / 255.0 - kMean[c]) / kStd[c];
      out[layout == Layout::kNchw ? c * pixels + i : 3 * i + c] = v;
    }
  }
  return out;
}

// What `store` wrote into a buffer of the sample's bytes and a canary tail, checked.
std::vector<double> written(PixelStore& store, const cv::Mat& square, DType dtype, bool mirror) {
  const std::size_t bytes = sample_bytes(dtype, static_cast<std::uint32_t>(square.rows));
  std::vector<std::byte> buffer(bytes + 64, kCanary);
  store.write(square, mirror, buffer.data());
  for (std::size_t i = bytes; i < buffer.size(); ++i) {
    EXPECT_EQ(buffer[i], kCanary) << "byte " << i - bytes << " past the sample";
  }
  std::vector<double> values(bytes / (dtype == DType::kUint8 ? 1 : sizeof(float)));
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (dtype == DType::kUint8) {
      values[k] = static_cast<double>(std::to_integer<std::uint8_t>(buffer[k]));
    } else {
      float f;
      std::memcpy(&f, buffer.data() + k * sizeof f, sizeof f);
      values[k] = f;
    }
  }
  return values;
}

using Case = std::tuple<DType, Layout, bool>;

class PixelStoreTest : public ::testing::TestWithParam<Case> {
 protected:
  DType dtype() const { return std::get<0>(GetParam()); }
  Layout layout() const { return std::get<1>(GetParam()); }
  bool mirror() const { return std::get<2>(GetParam()); }
  PixelStore make() const { return PixelStore(dtype(), layout(), Normalisation::of(kMean, kStd)); }

  // uint8 exactly; float32 within 1e-5 (a fused multiply-add rounds once, x * s + t twice).
  void expect_reference(const std::vector<double>& got, const cv::Mat& square,
                        const std::string& what) const {
    const std::vector<double> want = reference(square, dtype(), layout(), mirror());
    ASSERT_EQ(got.size(), want.size()) << what;
    const double tolerance = dtype() == DType::kUint8 ? 0.0 : 1e-5;
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      if (std::abs(got[k] - want[k]) > tolerance && ++wrong <= 3) {
        ADD_FAILURE() << what << ": value " << k << " is " << got[k] << ", expected " << want[k];
      }
    }
    EXPECT_EQ(wrong, 0u) << what;
  }
};

TEST_P(PixelStoreTest, EqualsTheReferenceAtEverySize) {
  PixelStore store = make();  // one store for every size: its scratch grows and shrinks
  for (const int size : {1, 2, 3, 7, 15, 16, 17, 31, 64, 65, 224, 225, 97, 5}) {
    const cv::Mat square = random_image(size, size, size);
    expect_reference(written(store, square, dtype(), mirror()), square, "size " + std::to_string(size));
  }
}

TEST_P(PixelStoreTest, ReadsAStridedRegionOfALargerImage) {
  PixelStore store = make();
  const cv::Mat big = random_image(90, 130, 7);
  const cv::Mat crop = big(cv::Rect(21, 13, 67, 67));  // rows 130 pixels apart
  ASSERT_FALSE(crop.isContinuous());
  expect_reference(written(store, crop, dtype(), mirror()), crop.clone(), "a 67 x 67 crop of 130 x 90");
}

std::string name(const ::testing::TestParamInfo<Case>& info) {
  const auto [dtype, layout, mirror] = info.param;
  return std::string(dtype == DType::kUint8 ? "uint8" : "float32") +
         (layout == Layout::kNhwc ? "_nhwc" : "_nchw") + (mirror ? "_mirrored" : "");
}

INSTANTIATE_TEST_SUITE_P(EveryOutput, PixelStoreTest,
                         ::testing::Combine(::testing::Values(DType::kUint8, DType::kFloat32),
                                            ::testing::Values(Layout::kNhwc, Layout::kNchw),
                                            ::testing::Bool()),
                         name);

TEST(NormalisationTest, ScaleAndShiftAreTheMeanAndStd) {
  const Normalisation n = Normalisation::of(kMean, kStd);
  for (int c = 0; c < 3; ++c) {
    for (const int x : {0, 1, 128, 255}) {
      EXPECT_NEAR(x * n.scale[c] + n.shift[c], (x / 255.0 - kMean[c]) / kStd[c], 1e-6)
          << "channel " << c << " x " << x;
    }
  }
}

}  // namespace
}  // namespace forkfeed
