// Transform pipelines: reading the text, the errors at open (naming op and argument), the
// order rules, the size and dtype a pipeline makes, the window its crops compose to, the
// shorthands' bytes against the transform they replaced, the random ops' draws, and a
// whole pipeline through a Loader: the same bytes for any worker count, and on resume.
#include "transforms/pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <vector>

#include "plan/image_plan.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "transforms/pipeline_spec.h"
#include "workers/fused_decode.h"
#include "workers/pixel_store.h"
#include "workers/sample_pipeline.h"

namespace forkfeed {
namespace {

PipelineOptions options(std::uint32_t size = 0, DType dtype = DType::kUint8) {
  return {size, dtype, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 89'478'485};
}

std::string error_of(std::string_view text, const PipelineOptions& o = options()) {
  auto p = Pipeline::build(text, o);
  return p.ok() ? std::string("(built)") : p.status().message();
}

TEST(PipelineSpec, ReadsPositionalKeywordTupleWordAndNoneArguments) {
  auto calls = parse_calls(
      " T.RandomResizedCrop(224, scale=(0.08, 1), ratio=[0.75, 1.5]),RandomRotation(-3.5e1, "
      "interpolation=InterpolationMode.BILINEAR, fill=None) , RandomErasing(value='random', p=(0.5)), "
      "AugMix(all_ops=False, alpha=(1,))");
  ASSERT_TRUE(calls.ok()) << calls.status().message();
  ASSERT_EQ(calls->size(), 4u);
  const OpCall& rrc = (*calls)[0];
  EXPECT_EQ(rrc.name, "RandomResizedCrop");
  ASSERT_EQ(rrc.positional.size(), 1u);
  EXPECT_EQ(rrc.positional[0].number, 224);
  ASSERT_EQ(rrc.keywords.size(), 2u);
  EXPECT_EQ(rrc.keywords[0].second.tuple, (std::vector<double>{0.08, 1}));
  EXPECT_EQ(rrc.keywords[1].second.tuple, (std::vector<double>{0.75, 1.5}));
  const OpCall& rotation = (*calls)[1];
  EXPECT_EQ(rotation.positional[0].number, -35);
  EXPECT_EQ(rotation.keywords[0].second.word, "InterpolationMode.BILINEAR");
  EXPECT_EQ(rotation.keywords[1].second.kind, SpecValue::Kind::kNone);
  EXPECT_EQ((*calls)[2].keywords[0].second.word, "random");
  EXPECT_EQ((*calls)[2].keywords[1].second.kind, SpecValue::Kind::kNumber)
      << "(0.5) is a number, not a tuple";
  EXPECT_EQ((*calls)[3].keywords[0].second.kind, SpecValue::Kind::kBool);
  EXPECT_EQ((*calls)[3].keywords[1].second.kind, SpecValue::Kind::kTuple) << "(1,) is a tuple";
}

TEST(PipelineSpec, SyntaxErrorsSayWhereAndWhatWasExpected) {
  for (auto [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"", "transform is empty"},
           {"RandomResizedCrop", "'(' after RandomResizedCrop"},
           {"RandomResizedCrop(224", "',' or ')'"},
           {"RandomResizedCrop(size=224, (0.1, 1))", "positional one follows one given by name"},
           {"Normalize(mean=(0.5, 0.5, 0.5)", "',' or ')'"},
           {"RandomErasing(value='random)", "closing '"},
           {"RandomCrop(32) RandomHorizontalFlip()", "',' between ops"},
           {"RandomCrop(nan)", "(built)"},  // a word, refused by the op (below)
       }) {
    auto calls = parse_calls(text);
    const std::string got = calls.ok() ? "(built)" : calls.status().message();
    EXPECT_NE(got.find(expected), std::string::npos) << text << " -> " << got;
  }
  EXPECT_NE(error_of("RandomCrop(nan)").find("RandomCrop's size"), std::string::npos);
}

TEST(PipelineBuild, BadArgumentsNameTheOpAndTheArgument) {
  for (auto [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"Foo(1)", "unknown op 'Foo'"},
           {"RandomResizedCrop(224, 3, 4, 5, 6, 7)", "RandomResizedCrop takes at most 5 arguments"},
           {"RandomResizedCrop(224, scales=(0.1, 1))", "RandomResizedCrop has no argument 'scales'"},
           {"RandomResizedCrop(224, size=224)", "got 'size' twice"},
           {"RandomResizedCrop()", "RandomResizedCrop needs its argument 'size'"},
           {"RandomResizedCrop(224, scale=(1, 0.5))", "RandomResizedCrop's scale"},
           {"RandomResizedCrop(0)", "RandomResizedCrop's size"},
           {"RandomResizedCrop(224, interpolation=InterpolationMode.BICUBIC)",
            "RandomResizedCrop's interpolation"},
           {"RandomCrop(32, padding=(1, 2, 3))", "RandomCrop's padding"},
           {"RandomCrop(32, padding=-1)", "RandomCrop's padding"},
           {"RandomCrop(32, padding=1.5)", "RandomCrop's padding"},
           {"RandomCrop(32, padding=4, padding_mode='reflect')", "RandomCrop's padding_mode"},
           {"RandomCrop(32, pad_if_needed=True, padding_mode='edge')", "RandomCrop's padding_mode"},
           {"RandomResize(32), CenterCrop(32)", "RandomResize needs its argument 'max_size'"},
           {"RandomResize(32, 32), CenterCrop(32)", "RandomResize's max_size"},
           {"RandomResize(0, 32), CenterCrop(32)", "RandomResize's min_size"},
           {"RandomResize(16, 32, interpolation=InterpolationMode.NEAREST), CenterCrop(32)",
            "RandomResize's interpolation"},
           {"RandomZoomOut(side_range=(0.5, 2)), CenterCrop(32)", "RandomZoomOut's side_range"},
           {"RandomZoomOut(side_range=(3, 2)), CenterCrop(32)", "RandomZoomOut's side_range"},
           {"RandomIoUCrop(min_scale=0.8, max_scale=0.5), CenterCrop(32)", "RandomIoUCrop's max_scale"},
           {"RandomIoUCrop(trials=0), CenterCrop(32)", "RandomIoUCrop's trials"},
           {"ScaleJitter(), CenterCrop(32)", "ScaleJitter needs its argument 'target_size'"},
           {"ScaleJitter((64, 64), scale_range=(0, 1)), CenterCrop(32)", "ScaleJitter's scale_range"},
           {"RandomShortestSize((32, 40.5)), CenterCrop(32)", "RandomShortestSize's min_size"},
           {"FixedSizeCrop(32, padding_mode='edge')", "FixedSizeCrop's padding_mode"},
           {"CenterCrop(32), ColorJitter(brightness=-1)", "ColorJitter's brightness"},
           {"CenterCrop(32), ColorJitter(hue=0.7)", "ColorJitter's hue"},
           {"CenterCrop(32), GaussianBlur(4)", "GaussianBlur's kernel_size"},
           {"CenterCrop(32), Grayscale()", "Grayscale's num_output_channels"},
           {"CenterCrop(32), RandomRotation(10, expand=True)", "RandomRotation's expand"},
           {"CenterCrop(32), RandomAffine(0, shear=(1, 2, 3))", "RandomAffine's shear"},
           {"CenterCrop(32), RandomPosterize(9)", "RandomPosterize's bits"},
           {"CenterCrop(32), RandomHorizontalFlip(p=1.5)", "RandomHorizontalFlip's p"},
           {"CenterCrop(32), RandAugment(magnitude=31)", "RandAugment's magnitude"},
           {"CenterCrop(32), AutoAugment(AutoAugmentPolicy.CIFAR10)", "AutoAugment's policy"},
           {"CenterCrop(32), AugMix(chain_depth=0)", "AugMix's chain_depth"},
           {"CenterCrop(32), Normalize(std=(0.2, 0, 0.2))", "Normalize's mean/std"},
           {"CenterCrop(32), Normalize(std=(1e-45, 1, 1))", "overflow float32"},
           {"CenterCrop(32), Normalize(mean=(1e39, 0, 0))", "Normalize's mean/std"},
           {"CenterCrop(32), ColorJitter(hue=-0.2)", "ColorJitter's hue"},
           {"Resize(32, max_size=32), CenterCrop(32)", "Resize's max_size"},
           {"CenterCrop(32), Normalize(), RandomErasing(value='noise')", "RandomErasing's value"},
           {"CenterCrop(32), Normalize(), RandomErasing(scale=(0.5, 2))", "RandomErasing's scale"},
       }) {
    const std::string got = error_of(text);
    EXPECT_NE(got.find(expected), std::string::npos) << text << " -> " << got;
  }
}

TEST(PipelineBuild, TheOrderIsCheckedAsTorchvisionWouldOrAsTheFusedDecodeNeeds) {
  for (auto [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"CenterCrop(32), RandomErasing(), Normalize()",
            "RandomErasing() works on the normalised float tensor"},
           {"CenterCrop(32), ColorJitter(0.4), Resize(16)", "Resize(16) comes after ColorJitter(0.4)"},
           {"CenterCrop(32), Normalize(), ColorJitter(0.4)", "ColorJitter(0.4) works on uint8 images"},
           {"CenterCrop(32), Normalize(), Normalize()", "the second Normalize"},
           {"CenterCrop(32), ToTensor()", "ToTensor() without Normalize()"},
           {"CenterCrop(32), Normalize(), RandomErasing(), RandomHorizontalFlip()", "put flips before it"},
           // torchvision would mirror before an odd CenterCrop margin: one column off if moved.
           {"RandomHorizontalFlip(), CenterCrop(33)", "CenterCrop(33) comes after RandomHorizontalFlip()"},
           {"Resize(32)", "samples whose size depends on the image"},
           {"Resize((32, 48))", "48x32 samples"},
           {"RandomHorizontalFlip()", "samples whose size depends on the image"},
       }) {
    const std::string got = error_of(text);
    EXPECT_NE(got.find(expected), std::string::npos) << text << " -> " << got;
  }
  // A flip after Normalize is the same flip before it; ToTensor before Normalize is a no-op.
  EXPECT_EQ(error_of("CenterCrop(32), ToTensor(), Normalize(), RandomHorizontalFlip()"), "(built)");
  EXPECT_EQ(error_of("CenterCrop(32), PILToTensor()"), "(built)");
}

TEST(PipelineBuild, SizeAndDtypeAreWhatThePipelineMakes) {
  auto p = Pipeline::build("RandomResizedCrop(176), RandomHorizontalFlip()", options());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), 176u);
  EXPECT_EQ(p->dtype(), DType::kUint8);
  EXPECT_EQ(Pipeline::build("train", options()).value().size(), 224u) << "the shorthands' default";
  EXPECT_EQ(Pipeline::build("eval", options(160)).value().size(), 160u);
  EXPECT_EQ(Pipeline::build("Resize(256), CenterCrop((96, 96))", options()).value().size(), 96u);
  EXPECT_EQ(Pipeline::build("Resize((40, 40))", options()).value().size(), 40u);
  EXPECT_NE(error_of("RandomResizedCrop(176)", options(224)).find("size 224 differs from the 176 x 176"),
            std::string::npos);
  // dtype float32 on a pipeline without Normalize: normalised with the options' mean and std.
  auto f = Pipeline::build("CenterCrop(32)", options(0, DType::kFloat32));
  EXPECT_EQ(f->dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(f->normalisation().mean[0], 0.485f);
  // Normalize() alone gives float32 whatever dtype says, with its own mean and std.
  auto n = Pipeline::build("CenterCrop(32), Normalize((0.5, 0.25, 0.125), 0.5)", options());
  EXPECT_EQ(n->dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(n->normalisation().mean[2], 0.125f);
  EXPECT_FLOAT_EQ(n->normalisation().std[1], 0.5f);

  LoaderOptions o;
  o.transform = "CenterCrop(48), Normalize()";
  auto planned = plan_images(o, {});
  ASSERT_TRUE(planned.ok());
  EXPECT_EQ(planned->front().transform.size, 48u);
  EXPECT_EQ(planned->front().transform.dtype, DType::kFloat32);
  o.transform = std::string(kTransformTextBytes, ' ');
  EXPECT_NE(plan_images(o, {}).status().message().find("at most"), std::string::npos);
}

TEST(PipelinePlan, CropsAndResizesComposeToOneWindowOfTheImage) {
  KeyedRng rng({1});
  // eval at 224 on 500 x 375: resized to 341 x 256, center 224 at (58, 16) (58.5 rounds to even).
  const Region e = Pipeline::build("eval", options()).value().plan(500, 375, rng).value().source;
  EXPECT_DOUBLE_EQ(e.x, 58 * (500.0 / 341));
  EXPECT_DOUBLE_EQ(e.y, 16 * (375.0 / 256));
  EXPECT_DOUBLE_EQ(e.width, 224 * (500.0 / 341));
  EXPECT_DOUBLE_EQ(e.height, 224 * (375.0 / 256));
  // Resize((100, 200)) then CenterCrop(50) on 400 x 300: a quarter of the width, half the height.
  const Region r = Pipeline::build("Resize((100, 200)), CenterCrop(50)", options())
                       .value()
                       .plan(400, 300, rng)
                       .value()
                       .source;
  EXPECT_DOUBLE_EQ(r.x, 75 * 2.0);
  EXPECT_DOUBLE_EQ(r.y, 25 * 3.0);
  EXPECT_DOUBLE_EQ(r.width, 100);
  EXPECT_DOUBLE_EQ(r.height, 150);
  // A center crop larger than the image pads it with 0 as F.center_crop does: (64 - 40) // 2
  // columns before it; rows: the center 64 of 80. A resize past max_pixels is bad data.
  std::vector<GeometryStep> steps;
  ASSERT_TRUE(Pipeline::build("CenterCrop(64)", options()).value().steps(40, 80, rng, steps).ok());
  EXPECT_EQ(std::make_pair(steps[0].x, steps[0].y), std::make_pair(-12, 8));
  ASSERT_TRUE(Pipeline::build("CenterCrop(9)", options()).value().steps(4, 3, rng, steps).ok());
  EXPECT_EQ(std::make_pair(steps[0].x, steps[0].y), std::make_pair(-2, -3));  // 9 - 4 = 5: 2 before, 3 after
  PipelineOptions tight = options();
  tight.max_pixels = 100'000;  // a square image resized for eval fits; a 1 x 2000 strip does not
  auto strip = Pipeline::build("eval", tight).value().plan(1, 2000, rng);
  EXPECT_EQ(strip.status().code(), Status::Code::kBadData);
}

// RandomCrop's padding: the window is the part of the image that shows, and where in the
// output it lands; the rest is the fill.
TEST(PipelinePlan, APaddedCropShowsThePartOfTheImageInsideIt) {
  KeyedRng rng({1});
  // 40 x 30 padded to 64 x 64 (12 columns and 17 rows of lack, each side): 88 x 64 and
  // 64 x 94 padded images; the crop shows all of the image, somewhere.
  const Pipeline whole =
      Pipeline::build("RandomCrop(64, pad_if_needed=True, fill=(1, 2, 3))", options()).value();
  for (int i = 0; i < 20; ++i) {
    const SampleWindow w = whole.plan(40, 30, rng).value();
    EXPECT_EQ(w.width, 40);
    EXPECT_EQ(w.height, 30);
    EXPECT_TRUE(w.x >= 0 && w.x <= 24 && w.y >= 0 && w.y <= 34) << w.x << "," << w.y;
    EXPECT_DOUBLE_EQ(w.source.x, 0);
    EXPECT_DOUBLE_EQ(w.source.width, 40);
    EXPECT_EQ(w.fill, (std::array<float, 3>{1, 2, 3}));
  }
  // Resize((100, 200)) of 400 x 300, then padding 10 and a crop of 50 at its top-left: the
  // window's output rectangle is where the resized image shows, its source that part of it.
  std::vector<GeometryStep> steps = {{0, 0, 400, 300, 200, 100}, {-10, -10, 50, 50, 50, 50}};
  SampleWindow w = Pipeline::window_of(steps, 400, 300);
  EXPECT_EQ((std::array<int, 4>{w.x, w.y, w.width, w.height}), (std::array<int, 4>{10, 10, 40, 40}));
  EXPECT_DOUBLE_EQ(w.source.x, 0);
  EXPECT_DOUBLE_EQ(w.source.y, 0);
  EXPECT_DOUBLE_EQ(w.source.width, 80);
  EXPECT_DOUBLE_EQ(w.source.height, 120);
  // A crop wholly in the padding shows nothing.
  steps = {{-60, 0, 50, 50, 50, 50}};
  EXPECT_TRUE(Pipeline::window_of(steps, 400, 300).empty());
  // No padding: the window is the whole output.
  steps = {{5, 6, 50, 40, 25, 20}};
  w = Pipeline::window_of(steps, 400, 300);
  EXPECT_EQ((std::array<int, 4>{w.x, w.y, w.width, w.height}), (std::array<int, 4>{0, 0, 25, 20}));
  // Too small even padded: bad data naming the op, the image's own size and the padded one.
  auto small = Pipeline::build("RandomCrop(64, padding=(10000, 4))", options()).value().plan(40, 50, rng);
  EXPECT_EQ(small.status().code(), Status::Code::kBadData);
  EXPECT_NE(
      small.status().message().find("this one is 40x50 (after the ops before it), 20040x58 with its padding: "
                                    "pad it with pad_if_needed=True"),
      std::string::npos)
      << small.status().message();
}

// RandomIoUCrop with no box it could hold (none, or every centre outside the image) leaves
// the image as it is at once, however many trials it may take.
TEST(PipelinePlan, AnIoUCropWithNoBoxToHoldLeavesTheImage) {
  const Pipeline p =
      Pipeline::build("RandomIoUCrop(sampler_options=(0.0,), trials=100000), Resize((32, 32))", options())
          .value();
  std::vector<GeometryStep> steps;
  const std::vector<Box> outside = {{-50, -50, -10, -10}, {NAN, 1, 2, 3}, {500, 10, 600, 20}};
  for (const std::vector<Box>& boxes : {std::vector<Box>{}, outside}) {
    KeyedRng rng({1}), untouched({1});
    ASSERT_TRUE(p.steps(400, 300, rng, steps, boxes).ok());
    EXPECT_EQ(steps[0].width, 400);
    EXPECT_FALSE(steps[0].centred_boxes_only);
    EXPECT_EQ(rng.below(1u << 30), untouched.below(1u << 30)) << "it drew crops it could not use";
  }
  // A box it can hold: a crop around it.
  KeyedRng rng({1});
  const std::vector<Box> one = {{100, 100, 200, 150}};
  ASSERT_TRUE(p.steps(400, 300, rng, steps, one).ok());
  EXPECT_TRUE(steps[0].centred_boxes_only);
}

// The detection references' resizes and crops: ScaleJitter's scale, RandomShortestSize's
// sizes, FixedSizeCrop's padding at the bottom and right only, RandomZoomOut's canvas.
TEST(PipelinePlan, TheDetectionReferencesResizesAndCrops) {
  std::set<int> shortest;
  for (std::uint64_t i = 0; i < 200; ++i) {
    KeyedRng rng({5, 0, i});
    std::vector<GeometryStep> steps;
    ASSERT_TRUE(
        Pipeline::build("ScaleJitter((100, 100), scale_range=(0.5, 2.0)), FixedSizeCrop(120)", options())
            .value()
            .steps(400, 200, rng, steps)
            .ok());
    // min(100 / 200, 100 / 400) = 0.25, times 0.5 to 2: 50 x 25 to 200 x 100.
    EXPECT_TRUE(steps[0].out_width >= 50 && steps[0].out_width <= 200) << steps[0].out_width;
    EXPECT_EQ(steps[0].out_height, steps[0].out_width / 2);
    // The crop starts inside the image; what it lacks is below (always: 100 rows at most)
    // and to the right.
    EXPECT_EQ(steps[1].width, 120);
    EXPECT_EQ(steps[1].y, 0);
    if (steps[0].out_width <= 120) {
      EXPECT_EQ(steps[1].x, 0);
    } else {
      EXPECT_TRUE(steps[1].x >= 0 && steps[1].x + 120 <= steps[0].out_width) << steps[1].x;
    }
    ASSERT_TRUE(Pipeline::build("RandomShortestSize((30, 40, 50), max_size=90), CenterCrop(20)", options())
                    .value()
                    .steps(400, 200, rng, steps)
                    .ok());
    shortest.insert(steps[0].out_height);
    EXPECT_LE(steps[0].out_width, 90);
    ASSERT_TRUE(Pipeline::build("RandomZoomOut(p=1.0), CenterCrop(20)", options())
                    .value()
                    .steps(40, 30, rng, steps)
                    .ok());
    EXPECT_TRUE(steps[0].x <= 0 && steps[0].y <= 0 && steps[0].width >= 40 && steps[0].width < 160);
    EXPECT_TRUE(steps[0].x + steps[0].width >= 40 && steps[0].y + steps[0].height >= 30);
  }
  EXPECT_EQ(shortest, (std::set<int>{30, 40, 45}));  // 50 would make the longer side 100 > 90
}

// v2.RandomResize(min_size, max_size): the shorter side drawn in [min_size, max_size), every
// size drawn; the longer side as Resize(int) scales it.
TEST(PipelinePlan, RandomResizeDrawsTheShorterSideBelowMaxSize) {
  const Pipeline p = Pipeline::build("RandomResize(20, 24), CenterCrop(16)", options()).value();
  std::set<int> seen;
  for (std::uint64_t i = 0; i < 200; ++i) {
    KeyedRng rng({3, 0, i});
    std::vector<GeometryStep> steps;
    ASSERT_TRUE(p.steps(400, 300, rng, steps).ok());
    seen.insert(steps[0].out_height);
    EXPECT_EQ(steps[0].out_width, steps[0].out_height * 400 / 300);
  }
  EXPECT_EQ(seen, (std::set<int>{20, 21, 22, 23}));
  EXPECT_FALSE(Pipeline::build("RandomResize(20, 24)", options()).ok()) << "no fixed size";
}

TEST(PipelinePlan, TwoResamplingStepsAreDoneOneAfterAnotherNotFused) {
  EXPECT_TRUE(
      Pipeline::build("Resize(256), CenterCrop(224), RandomHorizontalFlip()", options()).value().fusable());
  EXPECT_TRUE(Pipeline::build("RandomCrop(300), RandomResizedCrop(224)", options()).value().fusable());
  // Down to 16 and up again: one window resized once would skip the loss of detail.
  EXPECT_FALSE(Pipeline::build("Resize((16, 16)), Resize((64, 64))", options()).value().fusable());
  EXPECT_FALSE(Pipeline::build("Resize(256), RandomResizedCrop(224)", options()).value().fusable());
  // Padding before or after the one resize: the window is the part of the image that shows.
  EXPECT_TRUE(Pipeline::build("RandomResize(200, 300), RandomCrop(224, pad_if_needed=True)", options())
                  .value()
                  .fusable());
  EXPECT_TRUE(Pipeline::build("RandomCrop(64, padding=4), Resize((32, 32))", options()).value().fusable());
  // Two that pad, each with its fill: step by step.
  EXPECT_FALSE(Pipeline::build("RandomZoomOut(fill=9), RandomCrop(64, pad_if_needed=True)", options())
                   .value()
                   .fusable());

  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 1, 1, 3, 90, 120);
  LoaderOptions o;
  o.image_folder = root;
  o.transform = "Resize((16, 16)), Resize((64, 64))";
  const TransformSpec spec = plan_images(o, {}).value().front().transform;
  std::string path;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) path = entry.path().string();
  }
  ASSERT_FALSE(path.empty());
  SamplePipeline fused(spec, DecodePath::kFused), reference(spec, DecodePath::kOpenCv);
  std::vector<std::byte> a(sample_bytes(DType::kUint8, 64)), b(a.size());
  ASSERT_TRUE(fused.run(path, 0, 0, a.data()).ok());
  ASSERT_TRUE(reference.run(path, 0, 0, b.data()).ok());
  EXPECT_EQ(a, b) << "the loader's path does both resizes";
  // And the result is blurred: 16 x 16 of detail, neighbours close.
  int steps = 0;
  for (std::size_t i = 3; i < a.size(); i += 3)
    steps += std::abs(std::to_integer<int>(a[i]) - std::to_integer<int>(a[i - 3])) > 40;
  EXPECT_LT(steps, 40);
}

// ---- the shorthands' bytes, against the transform they replaced ----------------------

// The transform of issue 25's tree, kept here as it was: the train crop drew the flip
// right after the box; eval resized the shorter side to round(size / 0.875).
void legacy_transform(const cv::Mat& rgb, bool train, std::uint32_t size, DType dtype, Layout layout,
                      std::uint64_t key, std::byte* out) {
  KeyedRng rng({7, 0, key});
  const Normalisation norm = Normalisation::of({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
  PixelStore store(dtype, layout, norm);
  auto resize = [](const cv::Mat& from, cv::Mat& to) {
    const bool halves = 2 * to.cols <= from.cols && 2 * to.rows <= from.rows;
    cv::resize(from, to, to.size(), 0, 0, halves ? cv::INTER_AREA : cv::INTER_LINEAR);
  };
  const int s = static_cast<int>(size);
  cv::Mat square(s, s, CV_8UC3);
  if (train) {
    const CropBox box = random_resized_crop(rgb.cols, rgb.rows, rng);
    const bool flip = rng.uniform(0.0, 1.0) < 0.5;
    resize(rgb(cv::Rect(box.x, box.y, box.width, box.height)), square);
    store.write(square, flip, out);
    return;
  }
  const auto [w, h] = resized_size(rgb.cols, rgb.rows, eval_resize_for(s));
  cv::Mat resized(h, w, CV_8UC3);
  resize(rgb, resized);
  store.write(resized(cv::Rect(center_crop_offset(w, s), center_crop_offset(h, s), s, s)), false, out);
}

TEST(PipelineShorthands, GiveTheBytesOfTheTransformTheyReplaced) {
  cv::Mat rgb(300, 417, CV_8UC3);
  cv::RNG fill(5);
  fill.fill(rgb, cv::RNG::UNIFORM, 0, 256);
  cv::GaussianBlur(rgb, rgb, {7, 7}, 2.0);  // smooth, as photographs are, so resizes matter
  for (const char* name : {"train", "eval"}) {
    for (DType dtype : {DType::kUint8, DType::kFloat32}) {
      for (Layout layout : {Layout::kNhwc, Layout::kNchw}) {
        for (std::uint32_t size : {224u, 64u}) {
          LoaderOptions o;
          o.transform = name;
          o.size = size;
          o.dtype = dtype;
          o.layout = layout;
          o.seed = 7;
          FusedDecode t(plan_images(o, {}).value().front().transform);
          const std::size_t bytes = sample_bytes(dtype, size);
          std::vector<std::byte> got(bytes), want(bytes);
          for (std::uint64_t key = 0; key < 6; ++key) {
            KeyedRng rng({7, 0, key});
            ASSERT_TRUE(t.apply(rgb, rng, got.data()).ok());
            legacy_transform(rgb, std::string(name) == "train", size, dtype, layout, key, want.data());
            ASSERT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
                << name << " " << to_string(dtype) << " " << to_string(layout) << " " << size << " key "
                << key;
          }
        }
      }
    }
  }
}

// ---- the random ops' draws, seen in their output -------------------------------------

// Runs `text` (uint8, 8 x 8) on a flat image of `level` for keys 0..n-1 and counts the
// samples `pred` holds for.
template <typename Pred>
int count_samples(const std::string& text, int level, int n, Pred pred) {
  auto p = Pipeline::build(text, options());
  EXPECT_TRUE(p.ok()) << p.status().message();
  int hits = 0;
  for (int key = 0; key < n; ++key) {
    cv::Mat m(8, 8, CV_8UC3, cv::Scalar(level, level / 2, 255 - level));
    KeyedRng rng({3, 1, static_cast<std::uint64_t>(key)});
    if (p->run_pixels(m, rng)) cv::flip(m, m, 1);
    hits += pred(m) ? 1 : 0;
  }
  return hits;
}

// |hits - n p| within 4.5 standard deviations of a binomial(n, p).
void expect_binomial(int hits, int n, double p, const std::string& what) {
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(hits, n * p, 4.5 * sd) << what;
}

TEST(PipelineDraws, EachRandomOpIsAppliedWithItsProbability) {
  const int n = 4000;
  auto gray = [](const cv::Mat& m) {
    const cv::Vec3b px = m.at<cv::Vec3b>(0, 0);
    return px[0] == px[1] && px[1] == px[2];
  };
  expect_binomial(count_samples("CenterCrop(8), RandomGrayscale(p=0.3)", 100, n, gray), n, 0.3,
                  "RandomGrayscale");
  auto inverted = [](const cv::Mat& m) { return m.at<cv::Vec3b>(0, 0)[0] == 255 - 100; };
  expect_binomial(count_samples("CenterCrop(8), RandomInvert(0.2)", 100, n, inverted), n, 0.2,
                  "RandomInvert");
  auto solarized = [](const cv::Mat& m) { return m.at<cv::Vec3b>(0, 0)[0] != 200; };
  expect_binomial(count_samples("CenterCrop(8), RandomSolarize(128, p=0.7)", 200, n, solarized), n, 0.7,
                  "RandomSolarize");
  // Mirrors, seen on an image whose left and right halves differ.
  auto p = Pipeline::build("train", options());
  int mirrored = 0;
  for (int key = 0; key < n; ++key) {
    cv::Mat m;
    KeyedRng rng({3, 1, static_cast<std::uint64_t>(key)});
    (void)p->plan(640, 480, rng);
    mirrored += p->run_pixels(m, rng) ? 1 : 0;
  }
  expect_binomial(mirrored, n, 0.5, "RandomHorizontalFlip in train");
}

TEST(PipelineDraws, ColorJitterFactorsAreUniformOverTheirRange) {
  // brightness (0.5, 1.5) on a flat level 100: 50..150, each integer about equally often
  // (trunc(100 f), f uniform in [0.5, 1.5)): a chi-square test over 10 equal bins.
  auto p = Pipeline::build("CenterCrop(8), ColorJitter(brightness=0.5)", options());
  ASSERT_TRUE(p.ok());
  std::vector<int> bins(10, 0);
  const int n = 20000;
  for (int key = 0; key < n; ++key) {
    cv::Mat m(8, 8, CV_8UC3, cv::Scalar(100, 100, 100));
    KeyedRng rng({9, 0, static_cast<std::uint64_t>(key)});
    p->run_pixels(m, rng);
    const int level = m.at<cv::Vec3b>(0, 0)[0];
    ASSERT_GE(level, 50);
    ASSERT_LT(level, 150);
    bins[std::min(9, (level - 50) / 10)]++;
  }
  double chi2 = 0;
  for (int b = 0; b < 10; ++b) {
    const double expected = n / 10.0;
    chi2 += (bins[b] - expected) * (bins[b] - expected) / expected;
  }
  EXPECT_LT(chi2, 27.877) << "chi-square, 9 degrees of freedom, p = 0.001";
}

TEST(PipelineDraws, RandomErasingBoxesStayWithinScaleAndRatio) {
  auto p = Pipeline::build("CenterCrop(64), Normalize(), RandomErasing(p=0.5, scale=(0.1, 0.2), value=9)",
                           options());
  ASSERT_TRUE(p.ok());
  const int n = 2000;
  int erased = 0;
  std::vector<float> sample(64 * 64 * 3, 0.f);
  for (int key = 0; key < n; ++key) {
    std::fill(sample.begin(), sample.end(), 0.f);
    KeyedRng rng({4, 0, static_cast<std::uint64_t>(key)});
    p->run_tensor({sample.data(), 64, 64, Layout::kNchw}, rng);
    int area = 0, top = 64, bottom = -1, left = 64, right = -1;
    for (int y = 0; y < 64; ++y) {
      for (int x = 0; x < 64; ++x) {
        if (sample[y * 64 + x] != 9.f) continue;
        ++area;
        top = std::min(top, y), bottom = std::max(bottom, y), left = std::min(left, x),
        right = std::max(right, x);
      }
    }
    if (area == 0) continue;
    ++erased;
    EXPECT_EQ(area, (bottom - top + 1) * (right - left + 1)) << "a box";
    EXPECT_GE(area, 0.1 * 4096 * 0.85);
    EXPECT_LE(area, 0.2 * 4096 * 1.15);
    const double ratio = static_cast<double>(bottom - top + 1) / (right - left + 1);
    EXPECT_GE(ratio, 0.3 * 0.8);
    EXPECT_LE(ratio, 3.3 * 1.25);
  }
  expect_binomial(erased, n, 0.5, "RandomErasing p");
}

// ---- a whole pipeline through a Loader -----------------------------------------------

class PipelineLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = new std::string(testing::make_image_folder(dir_->path(), 24, 3, 5, 48, 96));
  }
  static void TearDownTestSuite() {
    delete root_;
    delete dir_;
  }
  static LoaderOptions pipeline_options(std::uint32_t workers) {
    LoaderOptions o = testing::small_options(*root_, workers, 4);
    o.size = 0;
    o.seed = 11;
    o.transform =
        "RandomResizedCrop(32, scale=(0.3, 1)), RandomHorizontalFlip(), TrivialAugmentWide(), "
        "ColorJitter(0.4, 0.4, 0.4, 0.1), RandomAffine(10, translate=(0.1, 0.1), shear=5), "
        "GaussianBlur(3), Normalize(), RandomErasing(0.5, value='random')";
    return o;
  }
  // Every batch's bytes of `epochs` epochs, each batch after the first `skip` ones.
  static std::vector<std::vector<std::byte>> batches(Loader& loader, int epochs, int skip = 0) {
    std::vector<std::vector<std::byte>> out;
    for (int e = 0; e < epochs; ++e) {
      for (Batch& b : loader) {
        if (skip > 0) {
          --skip;
          continue;
        }
        const auto* bytes = static_cast<const std::byte*>(b.data());
        out.emplace_back(bytes, bytes + b.bytes());
      }
    }
    return out;
  }
  static testing::TempDir* dir_;
  static std::string* root_;
};
testing::TempDir* PipelineLoaderTest::dir_ = nullptr;
std::string* PipelineLoaderTest::root_ = nullptr;

TEST_F(PipelineLoaderTest, TheSameBytesForAnyWorkerCountAndAfterAResume) {
  auto one = testing::open_loader(pipeline_options(1));
  auto three = testing::open_loader(pipeline_options(3));
  ASSERT_TRUE(one && three);
  const auto a = batches(*one, 2), b = batches(*three, 2);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a, b) << "a sample's pixels depend only on (seed, epoch, index)";
  EXPECT_EQ(a[0].size(), 4u * 3 * 32 * 32 * sizeof(float)) << "float32 NCHW 32 x 32";
  EXPECT_NE(a[0], a[6]) << "the next epoch draws anew";

  // A state taken after 4 batches resumes at the fifth, with the same pixels.
  auto saver = testing::open_loader(pipeline_options(2));
  ASSERT_TRUE(saver);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(saver->next().ok());
  auto resumed = Loader::open(pipeline_options(2), saver->state());
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  // The rest of this epoch, then the next one.
  const auto rest = batches(**resumed, 2);
  EXPECT_EQ(rest, std::vector<std::vector<std::byte>>(a.begin() + 4, a.end()));
}

TEST_F(PipelineLoaderTest, ABadPipelineFailsOpenNamingTheOp) {
  LoaderOptions o = pipeline_options(1);
  o.transform = "RandomResizedCrop(32), RandomAffine(degrees=-5)";
  auto loader = Loader::open(o);
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(loader.status().message().find("RandomAffine's degrees"), std::string::npos)
      << loader.status().message();
}

}  // namespace
}  // namespace forkfeed
