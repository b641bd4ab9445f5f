// Output dtype and layout: for train and eval, uint8 NCHW holds the pixels of uint8 NHWC
// in planes, and float32 in either layout is (uint8 / 255 - mean) / std of the same
// sample within 1e-5 — the same crops and flips, whatever the output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kSize = 16;
constexpr std::size_t kPlane = kSize * kSize;

class LayoutTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { root_ = testing::make_image_folder(dir_.path(), 9, 2); }

  testing::Batches read(DType dtype, Layout layout) const {
    LoaderOptions o = testing::small_options(root_, 2, 4);
    o.transform = GetParam();
    o.size = kSize;
    o.dtype = dtype;
    o.layout = layout;
    o.mean = {0.25f, 0.5f, 0.125f};
    o.std = {0.5f, 0.25f, 2.0f};
    o.seed = 3;
    auto loader = testing::open_loader(o);
    if (!loader) return {};
    auto first = loader->next();
    EXPECT_TRUE(first.ok() && first->has_value());
    if (first.ok() && first->has_value()) {
      const Batch& b = **first;
      const std::array<std::int64_t, 4> nhwc{4, kSize, kSize, 3}, nchw{4, 3, kSize, kSize};
      EXPECT_EQ(b.layout(), resolve(layout, dtype));
      EXPECT_EQ(b.shape(), b.layout() == Layout::kNhwc ? nhwc : nchw);
    }
    EXPECT_TRUE(loader->reset().ok());
    return testing::read_pass(*loader);
  }

  // Sample `s` channel `c` pixel `i` (row-major in the sample) of a batch in `layout`.
  static std::size_t at(Layout layout, std::size_t s, int c, std::size_t i) {
    return layout == Layout::kNhwc ? (s * kPlane + i) * 3 + c : (s * 3 + c) * kPlane + i;
  }

  testing::TempDir dir_;
  std::string root_;
};

TEST_P(LayoutTest, Uint8NchwHoldsTheNhwcPixelsInPlanes) {
  const testing::Batches nhwc = read(DType::kUint8, Layout::kAuto), nchw = read(DType::kUint8, Layout::kNchw);
  ASSERT_EQ(nhwc.size(), nchw.size());
  ASSERT_FALSE(nhwc.empty());
  for (std::size_t b = 0; b < nhwc.size(); ++b) {
    ASSERT_EQ(nhwc[b].indices, nchw[b].indices);
    ASSERT_EQ(nhwc[b].pixels.size(), nchw[b].pixels.size());
    for (std::size_t s = 0; s < nhwc[b].indices.size(); ++s) {
      for (int c = 0; c < 3; ++c) {
        for (std::size_t i = 0; i < kPlane; ++i) {
          ASSERT_EQ(nchw[b].pixels[at(Layout::kNchw, s, c, i)], nhwc[b].pixels[at(Layout::kNhwc, s, c, i)])
              << "batch " << b << " sample " << s << " channel " << c << " pixel " << i;
        }
      }
    }
  }
}

TEST_P(LayoutTest, Float32IsTheNormalisedUint8InEitherLayout) {
  const testing::Batches bytes = read(DType::kUint8, Layout::kNhwc);
  ASSERT_FALSE(bytes.empty());
  const float mean[3] = {0.25f, 0.5f, 0.125f}, std[3] = {0.5f, 0.25f, 2.0f};
  for (Layout layout : {Layout::kNchw, Layout::kNhwc}) {
    SCOPED_TRACE(std::string(to_string(layout)));
    const testing::Batches floats = read(DType::kFloat32, layout);
    ASSERT_EQ(floats.size(), bytes.size());
    for (std::size_t b = 0; b < bytes.size(); ++b) {
      ASSERT_EQ(floats[b].indices, bytes[b].indices);
      ASSERT_EQ(floats[b].pixels.size(), bytes[b].pixels.size() * sizeof(float));
      std::vector<float> values(bytes[b].pixels.size());
      std::memcpy(values.data(), floats[b].pixels.data(), floats[b].pixels.size());
      for (std::size_t s = 0; s < bytes[b].indices.size(); ++s) {
        for (int c = 0; c < 3; ++c) {
          for (std::size_t i = 0; i < kPlane; ++i) {
            const double x = bytes[b].pixels[at(Layout::kNhwc, s, c, i)];
            const double expected = (x / 255.0 - mean[c]) / std[c];
            ASSERT_NEAR(values[at(layout, s, c, i)], expected, 1e-5)
                << "batch " << b << " sample " << s << " channel " << c << " pixel " << i;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TrainAndEval, LayoutTest, ::testing::Values("train", "eval"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace forkfeed
