// What a pipeline may ask for, refused when it is read, naming the op and the argument:
// magnitudes that torch's float32 draws refuse (torchvision fails at its first sample;
// below that bound the draws work as torchvision's do), a float size where torchvision's
// Resize refuses one, and a size over max_pixels that no image could pass (every image
// would otherwise be skipped as bad data, one by one).
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "base/keyed_rng.h"
#include "transforms/pipeline.h"

namespace forkfeed {
namespace {

PipelineOptions options(std::uint64_t max_pixels = 89'478'485) {
  return {0, DType::kUint8, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, max_pixels};
}

std::string error_of(std::string_view text, const PipelineOptions& o = options()) {
  auto p = Pipeline::build(text, o);
  return p.ok() ? std::string("(built)") : p.status().message();
}

void expect_refused(const std::string& text, const std::vector<std::string>& words,
                    const PipelineOptions& o = options()) {
  const std::string got = error_of(text, o);
  for (const std::string& w : words) EXPECT_NE(got.find(w), std::string::npos) << text << " -> " << got;
}

// The reported cases: accepted, they gave all-black (or inf) samples. torchvision draws
// each in float32 and raises "from is out of bounds for float" (or "to-from to exceed the
// limit") at its first sample.
TEST(PipelineBounds, MagnitudesTorchCannotDrawAreRefusedWithTheAllowedRange) {
  expect_refused("CenterCrop(32), RandomRotation(1e300)",
                 {"RandomRotation's degrees", "3.40282e+38", "1e300"});
  expect_refused("CenterCrop(32), RandomAffine(0, shear=1e308)",
                 {"RandomAffine's shear", "3.40282e+38", "1e308"});
  expect_refused("CenterCrop(32), RandomAffine(0, scale=(1e300, 1e300))",
                 {"RandomAffine's scale", "3.40282e+38", "(1e300, 1e300)"});
  // Each end within float32, but wider than its largest number: torch refuses it too.
  expect_refused("CenterCrop(32), RandomRotation(2e38)",
                 {"RandomRotation's degrees", "spans more than 3.4e38"});
  expect_refused("CenterCrop(32), RandomAffine(0, shear=(-2e38, 2e38))", {"RandomAffine's shear", "spans"});
  expect_refused("CenterCrop(32), RandomAffine(0, shear=(0, 1, -2e38, 2e38))",
                 {"RandomAffine's shear", "spans"});
  expect_refused("RandomResizedCrop(32, scale=(0.5, 1e39))", {"RandomResizedCrop's scale", "3.40282e+38"});
  expect_refused("RandomResizedCrop(32, ratio=(0.5, 1e39))", {"RandomResizedCrop's ratio", "3.40282e+38"});
  expect_refused("CenterCrop(32), ColorJitter(brightness=1e39)", {"ColorJitter's brightness", "3.40282e+38"});
  expect_refused("CenterCrop(32), GaussianBlur(3, sigma=(0.1, 1e39))",
                 {"GaussianBlur's sigma", "3.40282e+38"});
  expect_refused("CenterCrop(32), AugMix(alpha=1e39)", {"AugMix's alpha", "3.40282e+38"});
  // What torch draws from is still taken: a full turn and more, and a span up to 3.4e38.
  EXPECT_EQ(error_of("CenterCrop(32), RandomRotation(720)"), "(built)");
  EXPECT_EQ(error_of("CenterCrop(32), RandomRotation((0, 3e38))"), "(built)");
  EXPECT_EQ(error_of("CenterCrop(32), RandomAffine(0, scale=(1e38, 3e38), shear=(-1e38, 1e38))"), "(built)");
}

// Found from outside: a positive parameter so small that float32 draws it as 0 gave
// all-black samples; torchvision raises at its first sample ("sigma should have positive
// values", "Argument scale should be positive"). Refused with the allowed range; the
// smallest normal float32 is still taken.
TEST(PipelineBounds, APositiveParameterFloat32DrawsAsZeroIsRefused) {
  expect_refused("CenterCrop(32), GaussianBlur(3, sigma=1e-300)",
                 {"GaussianBlur's sigma", "1.17549e-38", "1e-300"});
  expect_refused("CenterCrop(32), GaussianBlur(3, sigma=(1e-46, 1))",
                 {"GaussianBlur's sigma", "1.17549e-38"});
  expect_refused("CenterCrop(32), RandomAffine(0, scale=(1e-300, 1e-300))",
                 {"RandomAffine's scale", "1.17549e-38", "(1e-300, 1e-300)"});
  EXPECT_EQ(error_of("CenterCrop(32), GaussianBlur(3, sigma=(1.2e-38, 1))"), "(built)");
  EXPECT_EQ(error_of("CenterCrop(32), RandomAffine(0, scale=(1.2e-38, 1))"), "(built)");
}

// Below the bound the draws stay finite: a huge angle is a rotation, as in torchvision
// (whose RandomRotation(1e30) gives a rotated image), not an all-black sample.
TEST(PipelineBounds, AHugeAngleWithinTheBoundStillRotates) {
  auto p = Pipeline::build("CenterCrop(32), RandomRotation(1e30)", options());
  ASSERT_TRUE(p.ok()) << p.status().message();
  cv::Mat sample(32, 32, CV_8UC3);
  cv::randu(sample, 1, 255);
  for (std::uint64_t i = 0; i < 8; ++i) {
    cv::Mat s = sample.clone();
    KeyedRng rng({1, 0, i});
    (void)p->run_pixels(s, rng);
    EXPECT_GT(cv::countNonZero(s.reshape(1)), 32 * 32 * 3 / 4) << "sample " << i << " went (mostly) black";
  }
}

// RandomErasing(value=nan) said "must be one of 'random'"; a float32 sample cannot hold
// a value past 3.4e38 either.
TEST(PipelineBounds, RandomErasingSaysWhatItsValueMayBe) {
  for (const std::string text : {"CenterCrop(32), Normalize(), RandomErasing(value=nan)",
                                 "CenterCrop(32), Normalize(), RandomErasing(value='noise')",
                                 "CenterCrop(32), Normalize(), RandomErasing(value=(1, 2))"}) {
    expect_refused(text, {"RandomErasing's value",
                          "a number in [-3.4e38, 3.4e38], three of them (R, G, B) or 'random'"});
  }
  expect_refused("CenterCrop(32), Normalize(), RandomErasing(value=1e39)",
                 {"RandomErasing's value", "3.40282e+38"});
  EXPECT_EQ(error_of("CenterCrop(32), Normalize(), RandomErasing(value=(0.5, -1, 2))"), "(built)");
  EXPECT_EQ(error_of("CenterCrop(32), Normalize(), RandomErasing(value='random')"), "(built)");
}

// torchvision 0.14: Resize(1e2) raises "Size should be int or sequence"; the crops take a
// number n as int(n), so RandomResizedCrop(1e2) is 100 there and here.
TEST(PipelineBounds, AFloatSizeIsRefusedWhereTorchvisionRefusesIt) {
  expect_refused("Resize(1e2), CenterCrop(64)", {"Resize's size", "must be an int or a sequence", "1e2"});
  expect_refused("Resize(100.0), CenterCrop(64)", {"Resize's size", "100.0"});
  EXPECT_EQ(error_of("Resize(100), CenterCrop(64)"), "(built)");
  EXPECT_EQ(error_of("Resize((100, 100))"), "(built)");
  auto rrc = Pipeline::build("RandomResizedCrop(1e2)", options());
  ASSERT_TRUE(rrc.ok()) << rrc.status().message();
  EXPECT_EQ(rrc->size(), 100u);
}

// The reported case: Resize(20000), RandomCrop(64) with on_error=skip reported every file
// as bad data ("aspect ratio too extreme") and ended with 0 images and exit 0.
TEST(PipelineBounds, ASizeNoImageCanPassUnderMaxPixelsIsRefusedNamingTheOpAndTheSize) {
  expect_refused("Resize(20000), RandomCrop(64)",
                 {"Resize(20000)", "at least 20000x20000 = 400000000 pixels", "max_pixels 89478485"});
  expect_refused("Resize((5000, 8000)), CenterCrop(64)", {"Resize((5000, 8000))", "8000x5000 = 40000000"},
                 options(10'000'000));
  expect_refused("CenterCrop(4000)", {"CenterCrop(4000)", "4000x4000"}, options(10'000'000));
  expect_refused("RandomResizedCrop(4000)", {"RandomResizedCrop(4000)", "4000x4000"}, options(10'000'000));
  // What some image can pass is taken: an image is resized to at most max_pixels.
  EXPECT_EQ(error_of("Resize(3000), CenterCrop(2000)", options(10'000'000)), "(built)");
  // max_size may shorten the shorter side: some image passes.
  EXPECT_EQ(error_of("Resize(20000, max_size=30000), RandomCrop(64)"), "(built)");
}

// Found from outside: an image that one resize makes too large for max_pixels was bad
// data because its "aspect ratio [was] too extreme", whatever its shape. The message says
// what the resize makes of it.
TEST(PipelineBounds, AnImageAResizeMakesTooLargeIsToldWhatItWouldBecome) {
  KeyedRng rng({1});
  auto plan = Pipeline::build("Resize(9459), CenterCrop(64)", options()).value().plan(69, 65, rng);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kBadData);
  const std::string& why = plan.status().message();
  EXPECT_NE(
      why.find("resizing this 69x65 image to 10041x9459 makes 94977819 pixels, over max_pixels 89478485"),
      std::string::npos)
      << why;
  EXPECT_EQ(why.find("aspect ratio"), std::string::npos) << why;
}

}  // namespace
}  // namespace forkfeed
