// The AutoAugment family (transforms/augment.h): that each policy draws its ops, bins and
// signs with torchvision 0.14's frequencies (chi-square and binomial checks over 20,000
// keyed draws) and magnitudes (values printed by torchvision itself), from the key
// alone; and that run() changes pixels but not the image's shape or type.
#include "transforms/augment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <opencv2/core.hpp>
#include <optional>
#include <vector>

namespace forkfeed::augment {
namespace {

constexpr std::uint64_t kSeed = 26;
constexpr std::uint64_t kEpoch = 3;
constexpr int kDraws = 20000;
constexpr int kOps = 14;  // RandAugment's and TrivialAugmentWide's space: Identity to Equalize

// Upper 0.001 points of the chi-square distribution by degrees of freedom (statistical
// tables; checked against torch.special.gammaincc(df / 2, x / 2) = 0.001). A uniform
// sampler fails one check in a thousand, and the seeds are fixed, so a pass is stable.
constexpr double kChiSquare13 = 34.528;  // 14 ops
constexpr double kChiSquare24 = 51.179;  // 25 sub-policies
constexpr double kChiSquare30 = 59.703;  // 31 bins

// Pearson's statistic of `counts` against equal expected counts.
double chi_square_uniform(const std::vector<int>& counts) {
  double total = 0;
  for (int c : counts) {
    total += c;
  }
  const double expected = total / static_cast<double>(counts.size());
  double statistic = 0;
  for (int c : counts) {
    statistic += (c - expected) * (c - expected) / expected;
  }
  return statistic;
}

// |observed - n p| in standard deviations of a Binomial(n, p).
double binomial_sigmas(int observed, int n, double p) {
  return std::abs(observed - n * p) / std::sqrt(n * p * (1 - p));
}

bool is_signed(Op op) { return op >= Op::kShearX && op <= Op::kSharpness; }

template <typename Policy>
std::vector<DrawnOp> draw(const Policy& policy, std::uint64_t seed, std::uint64_t epoch, std::uint64_t index,
                          int width = 224, int height = 224) {
  KeyedRng rng({seed, epoch, index});
  std::vector<DrawnOp> out;
  policy.draw(rng, width, height, out);
  return out;
}

bool same(const std::vector<DrawnOp>& a, const std::vector<DrawnOp>& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].op != b[i].op || a[i].bin != b[i].bin || a[i].magnitude != b[i].magnitude) {
      return false;
    }
  }
  return true;
}

// What TrivialAugmentWide drew over kDraws keys.
struct TrivialCounts {
  std::vector<int> ops = std::vector<int>(kOps, 0);
  std::vector<int> bins = std::vector<int>(31, 0);  // pooled over the ops with magnitudes
  int signed_draws = 0;
  int negative = 0;
};

TrivialCounts count_trivial_augment() {
  const TrivialAugmentWide policy;
  TrivialCounts counts;
  for (int i = 0; i < kDraws; ++i) {
    const auto out = draw(policy, kSeed, kEpoch, static_cast<std::uint64_t>(i));
    EXPECT_EQ(out.size(), 1u);
    const DrawnOp& op = out.front();
    ++counts.ops.at(static_cast<std::size_t>(op.op));
    if (op.bin >= 0) {
      ++counts.bins.at(static_cast<std::size_t>(op.bin));
    }
    if (is_signed(op.op)) {
      ++counts.signed_draws;
      counts.negative += std::signbit(op.magnitude) ? 1 : 0;
    } else {
      EXPECT_FALSE(std::signbit(op.magnitude)) << name(op.op) << " is never negated";
    }
  }
  return counts;
}

TEST(TrivialAugmentWide, OpsBinsAndSignsAreUniform) {
  const TrivialCounts counts = count_trivial_augment();
  const double ops = chi_square_uniform(counts.ops);
  const double bins = chi_square_uniform(counts.bins);
  std::printf(
      "TrivialAugmentWide: chi-square ops %.2f (df 13), bins %.2f (df 30); %d of %d signed draws negative\n",
      ops, bins, counts.negative, counts.signed_draws);
  EXPECT_LT(ops, kChiSquare13);
  EXPECT_LT(bins, kChiSquare30);
  EXPECT_LT(binomial_sigmas(counts.negative, counts.signed_draws, 0.5), 4.0);
}

// A chi-square check that passed everything would prove nothing: these two samplers
// have the bugs it is there to catch, and it must reject both.
TEST(TrivialAugmentWide, ChiSquareRejectsBiasedSamplers) {
  std::vector<int> folded(kOps, 0);  // 4 random bits folded into 14 ops: 0 and 1 twice as likely
  std::vector<int> rounded(31, 0);   // the nearest of 31 bins to u * 30: the end bins half as likely
  for (int i = 0; i < kDraws; ++i) {
    KeyedRng rng({kSeed, kEpoch, static_cast<std::uint64_t>(i)});
    ++folded.at((rng.next() >> 60) % kOps);
    ++rounded.at(static_cast<std::size_t>(std::lround(rng.uniform(0, 1) * 30)));
  }
  const double ops = chi_square_uniform(folded);
  const double bins = chi_square_uniform(rounded);
  std::printf("Biased samplers: chi-square ops %.2f (df 13), bins %.2f (df 30)\n", ops, bins);
  EXPECT_GT(ops, kChiSquare13);
  EXPECT_GT(bins, kChiSquare30);
}

TEST(TrivialAugmentWide, MagnitudesAreTorchvisionsFloats) {
  // torchvision's TrivialAugmentWide()._augmentation_space(31) on this machine's torch.
  // ShearX's bin 19 and TranslateX's bin 24 are where the plain linspace formula is a
  // bit off.
  const TrivialAugmentWide policy;
  const std::vector<DrawnOp> expected = {
      {Op::kShearX, 0.6270000338554382, 19},
      {Op::kTranslateX, 25.600000381469727, 24},
      {Op::kTranslateX, 16.0, 15},
      {Op::kRotate, 135.0, 30},
      {Op::kBrightness, 0.824999988079071, 25},
      {Op::kPosterize, 8, 2},
      {Op::kPosterize, 5, 13},
      {Op::kPosterize, 2, 30},
      {Op::kSolarize, 170.0, 10},
  };
  std::vector<bool> seen(expected.size(), false);
  for (int i = 0; i < kDraws; ++i) {
    const DrawnOp op = draw(policy, kSeed, kEpoch, static_cast<std::uint64_t>(i)).front();
    for (std::size_t e = 0; e < expected.size(); ++e) {
      if (op.op == expected[e].op && op.bin == expected[e].bin) {
        EXPECT_EQ(std::abs(op.magnitude), expected[e].magnitude) << name(op.op) << " bin " << op.bin;
        seen[e] = true;
      }
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), static_cast<long>(expected.size()));
}

TEST(RandAugment, DrawsNumOpsUniformOpsAtTheGivenMagnitude) {
  // RandAugment()._augmentation_space(31, (200, 320)) at bin 9: TranslateX follows the
  // width (320), TranslateY the height.
  const std::vector<double> magnitude_at_9 = {0.0,  // Identity
                                              0.09000000357627869,
                                              0.09000000357627869,
                                              43.50453186035156,
                                              27.190332412719727,
                                              9.0,
                                              0.26999998092651367,
                                              0.26999998092651367,
                                              0.26999998092651367,
                                              0.26999998092651367,
                                              7.0,
                                              178.5,
                                              0.0,
                                              0.0};
  RandAugment policy;
  policy.num_ops = 3;
  std::vector<int> ops(kOps, 0);
  int signed_draws = 0;
  int negative = 0;
  for (int i = 0; i < kDraws; ++i) {
    const auto out = draw(policy, kSeed, kEpoch, static_cast<std::uint64_t>(i), 320, 200);
    ASSERT_EQ(out.size(), 3u);
    for (const DrawnOp& op : out) {
      const auto index = static_cast<std::size_t>(op.op);
      ASSERT_LT(index, ops.size());
      ++ops[index];
      EXPECT_EQ(std::abs(op.magnitude), magnitude_at_9[index]) << name(op.op);
      EXPECT_EQ(op.bin, magnitude_at_9[index] == 0.0 ? -1 : 9) << name(op.op);
      if (is_signed(op.op)) {
        ++signed_draws;
        negative += std::signbit(op.magnitude) ? 1 : 0;
      }
    }
  }
  const double statistic = chi_square_uniform(ops);
  std::printf("RandAugment: chi-square ops %.2f (df 13); %d of %d signed draws negative\n", statistic,
              negative, signed_draws);
  EXPECT_LT(statistic, kChiSquare13);
  EXPECT_LT(binomial_sigmas(negative, signed_draws, 0.5), 4.0);
}

// torchvision's ImageNet policy: (op, probability, |magnitude| as
// AutoAugment()._augmentation_space(10, ...) gives it for the magnitude_id, or nullopt).
struct ExpectedOp {
  Op op;
  double probability;
  std::optional<double> magnitude;
};
using ExpectedSubPolicy = std::array<ExpectedOp, 2>;

std::vector<ExpectedSubPolicy> imagenet_policy() {
  const auto none = std::nullopt;
  return {
      {{{Op::kPosterize, 0.4, 4.0}, {Op::kRotate, 0.6, 30.0}}},
      {{{Op::kSolarize, 0.6, 113.33333587646484}, {Op::kAutoContrast, 0.6, none}}},
      {{{Op::kEqualize, 0.8, none}, {Op::kEqualize, 0.6, none}}},
      {{{Op::kPosterize, 0.6, 5.0}, {Op::kPosterize, 0.6, 5.0}}},
      {{{Op::kEqualize, 0.4, none}, {Op::kSolarize, 0.2, 141.66665649414062}}},
      {{{Op::kEqualize, 0.4, none}, {Op::kRotate, 0.8, 26.66666603088379}}},
      {{{Op::kSolarize, 0.6, 170.0}, {Op::kEqualize, 0.6, none}}},
      {{{Op::kPosterize, 0.8, 6.0}, {Op::kEqualize, 1.0, none}}},
      {{{Op::kRotate, 0.2, 10.0}, {Op::kSolarize, 0.6, 28.33333396911621}}},
      {{{Op::kEqualize, 0.6, none}, {Op::kPosterize, 0.4, 5.0}}},
      {{{Op::kRotate, 0.8, 26.66666603088379}, {Op::kColor, 0.4, 0.0}}},
      {{{Op::kRotate, 0.4, 30.0}, {Op::kEqualize, 0.6, none}}},
      {{{Op::kEqualize, 0.0, none}, {Op::kEqualize, 0.8, none}}},
      {{{Op::kInvert, 0.6, none}, {Op::kEqualize, 1.0, none}}},
      {{{Op::kColor, 0.6, 0.3999999761581421}, {Op::kContrast, 1.0, 0.7999999523162842}}},
      {{{Op::kRotate, 0.8, 26.66666603088379}, {Op::kColor, 1.0, 0.19999998807907104}}},
      {{{Op::kColor, 0.8, 0.7999999523162842}, {Op::kSolarize, 0.8, 56.66666793823242}}},
      {{{Op::kSharpness, 0.4, 0.699999988079071}, {Op::kInvert, 0.6, none}}},
      {{{Op::kShearX, 0.6, 0.1666666716337204}, {Op::kEqualize, 1.0, none}}},
      {{{Op::kColor, 0.4, 0.0}, {Op::kEqualize, 0.6, none}}},
      {{{Op::kEqualize, 0.4, none}, {Op::kSolarize, 0.2, 141.66665649414062}}},
      {{{Op::kSolarize, 0.6, 113.33333587646484}, {Op::kAutoContrast, 0.6, none}}},
      {{{Op::kInvert, 0.6, none}, {Op::kEqualize, 1.0, none}}},
      {{{Op::kColor, 0.6, 0.3999999761581421}, {Op::kContrast, 1.0, 0.7999999523162842}}},
      {{{Op::kEqualize, 0.8, none}, {Op::kEqualize, 0.6, none}}},
  };
}

// How often each sub-policy was drawn, each of its slots applied, and both or neither.
struct SubPolicyCounts {
  int drawn = 0;
  std::array<int, 2> applied = {0, 0};
  int both = 0;
  int neither = 0;
};

// Which slots of `sub` the ops drawn are: where the two ops are one and the same, one
// applied op is counted as slot 1, as nothing tells them apart.
std::array<bool, 2> applied_slots(const ExpectedSubPolicy& sub, const std::vector<DrawnOp>& out) {
  if (sub[0].op == sub[1].op) {
    return {out.size() == 2, !out.empty()};
  }
  const bool first = !out.empty() && out.front().op == sub[0].op;
  return {first, out.size() == (first ? 2u : 1u)};
}

// The ops drawn are the sub-policy's, in its order, with its magnitudes (a signed op with
// either sign).
void count_applied(const ExpectedSubPolicy& sub, const std::vector<DrawnOp>& out, SubPolicyCounts& counts) {
  const std::array<bool, 2> applied = applied_slots(sub, out);
  std::vector<ExpectedOp> expected;
  for (std::size_t slot = 0; slot < 2; ++slot) {
    if (applied[slot]) {
      expected.push_back(sub[slot]);
      ++counts.applied[slot];
    }
  }
  ASSERT_EQ(out.size(), expected.size()) << "ops not of the sub-policy drawn";
  for (std::size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k].op, expected[k].op) << "ops not of the sub-policy drawn, or out of its order";
    EXPECT_EQ(out[k].bin < 0, !expected[k].magnitude.has_value()) << name(out[k].op);
    EXPECT_EQ(std::abs(out[k].magnitude), expected[k].magnitude.value_or(0.0)) << name(out[k].op);
  }
  ++counts.drawn;
  counts.both += out.size() == 2 ? 1 : 0;
  counts.neither += out.empty() ? 1 : 0;
}

// `probability` of `observed` in `n`, within 4.5 sigma; a certainty (0 or 1) exactly.
void expect_binomial(int observed, int n, double probability, const char* what) {
  if (probability == 0.0 || probability == 1.0) {
    EXPECT_EQ(observed, static_cast<int>(n * probability)) << what;
  } else {
    EXPECT_LT(binomial_sigmas(observed, n, probability), 4.5) << what << ": " << observed << " of " << n;
  }
}

TEST(AutoAugment, SubPoliciesUniformOpsAppliedWithTheirProbabilities) {
  const AutoAugment policy;
  const auto expected = imagenet_policy();
  std::vector<SubPolicyCounts> counts(expected.size());
  int signed_draws = 0;
  int negative = 0;
  for (int i = 0; i < kDraws; ++i) {
    const auto key = static_cast<std::uint64_t>(i);
    const auto out = draw(policy, kSeed, kEpoch, key);
    // get_params draws the sub-policy first: replaying that one draw tells which it was,
    // which the applied ops alone do not (both may be skipped).
    KeyedRng replay({kSeed, kEpoch, key});
    const auto index = static_cast<std::size_t>(replay.below(expected.size()));
    count_applied(expected[index], out, counts[index]);
    for (const DrawnOp& op : out) {
      if (is_signed(op.op) && op.magnitude != 0.0) {
        ++signed_draws;
        negative += op.magnitude < 0 ? 1 : 0;
      }
    }
  }
  std::vector<int> drawn;
  for (std::size_t s = 0; s < expected.size(); ++s) {
    drawn.push_back(counts[s].drawn);
    const ExpectedSubPolicy& sub = expected[s];
    const int n = counts[s].drawn;
    if (sub[0].op != sub[1].op) {
      expect_binomial(counts[s].applied[0], n, sub[0].probability, name(sub[0].op));
      expect_binomial(counts[s].applied[1], n, sub[1].probability, name(sub[1].op));
    }
    expect_binomial(counts[s].both, n, sub[0].probability * sub[1].probability, "both");
    expect_binomial(counts[s].neither, n, (1 - sub[0].probability) * (1 - sub[1].probability), "neither");
  }
  const double statistic = chi_square_uniform(drawn);
  std::printf("AutoAugment: chi-square sub-policies %.2f (df 24); %d of %d signed draws negative\n",
              statistic, negative, signed_draws);
  EXPECT_LT(statistic, kChiSquare24);
  EXPECT_LT(binomial_sigmas(negative, signed_draws, 0.5), 4.0);
}

TEST(Policies, SameKeySameDrawsOtherKeysOthers) {
  const AutoAugment auto_augment;
  const RandAugment rand_augment;
  const TrivialAugmentWide trivial_augment;
  // 100 samples' draws for a key: a sequence that another seed, epoch or index shift
  // reproduces with vanishing probability.
  const auto sequence = [&](std::uint64_t seed, std::uint64_t epoch, std::uint64_t first) {
    std::vector<std::vector<DrawnOp>> all;
    for (std::uint64_t i = first; i < first + 100; ++i) {
      all.push_back(draw(auto_augment, seed, epoch, i));
      all.push_back(draw(rand_augment, seed, epoch, i));
      all.push_back(draw(trivial_augment, seed, epoch, i));
    }
    return all;
  };
  const auto equal = [](const std::vector<std::vector<DrawnOp>>& a,
                        const std::vector<std::vector<DrawnOp>>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
  };
  const auto base = sequence(kSeed, kEpoch, 0);
  EXPECT_TRUE(equal(base, sequence(kSeed, kEpoch, 0)));
  EXPECT_FALSE(equal(base, sequence(kSeed + 1, kEpoch, 0)));
  EXPECT_FALSE(equal(base, sequence(kSeed, kEpoch + 1, 0)));
  EXPECT_FALSE(equal(base, sequence(kSeed, kEpoch, 1)));
}

// A 64x48 image with every channel varying: colour, edges and no flat regions, so that
// each op has something to change.
cv::Mat test_image() {
  cv::Mat img(48, 64, CV_8UC3);
  for (int y = 0; y < img.rows; ++y) {
    for (int x = 0; x < img.cols; ++x) {
      img.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<std::uint8_t>(x * 4), static_cast<std::uint8_t>(y * 5),
                                          static_cast<std::uint8_t>((x * y) % 251));
    }
  }
  return img;
}

bool differ(const cv::Mat& a, const cv::Mat& b) { return cv::norm(a, b, cv::NORM_INF) > 0; }

// Whether `op` changes test_image() whatever the rest of the draw did before it.
bool surely_changes(const DrawnOp& op) {
  switch (op.op) {
    case Op::kInvert: return true;
    case Op::kSolarize: return op.magnitude < 128;
    case Op::kRotate:
    case Op::kColor:
    case Op::kBrightness: return std::abs(op.magnitude) > 0.05;
    default: return false;
  }
}

// run() is draw() then apply() of each op: for the first key whose draw must change the
// image, run() equals that and differs from the input.
template <typename Policy>
void expect_run_applies_its_draw(const Policy& policy) {
  const cv::Mat original = test_image();
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const auto drawn = draw(policy, kSeed, kEpoch, i, original.cols, original.rows);
    if (std::none_of(drawn.begin(), drawn.end(), surely_changes)) {
      continue;
    }
    cv::Mat expected = original.clone();
    for (const DrawnOp& op : drawn) {
      apply(expected, op, policy.interpolation, policy.fill);
    }
    cv::Mat img = original.clone();
    KeyedRng rng({kSeed, kEpoch, i});
    std::vector<DrawnOp> scratch;
    policy.run(img, rng, scratch);
    ASSERT_EQ(img.size(), original.size());
    ASSERT_EQ(img.type(), CV_8UC3);
    EXPECT_TRUE(differ(img, original)) << name(drawn.front().op);
    EXPECT_FALSE(differ(img, expected));
    return;
  }
  FAIL() << "no key in 1000 drew a changing op";
}

TEST(Policies, RunAppliesWhatItDraws) {
  expect_run_applies_its_draw(AutoAugment{});
  expect_run_applies_its_draw(RandAugment{});
  expect_run_applies_its_draw(TrivialAugmentWide{});
}

TEST(AugMix, OutputDependsOnlyOnTheKey) {
  const AugMix policy;
  const cv::Mat original = test_image();
  const auto run = [&](std::uint64_t index) {
    cv::Mat img = original.clone();
    KeyedRng rng({kSeed, kEpoch, index});
    policy.run(img, rng);
    return img;
  };
  const cv::Mat first = run(0);
  ASSERT_EQ(first.size(), original.size());
  ASSERT_EQ(first.type(), CV_8UC3);  // uint8: within [0, 255] by type, the cast truncating
  EXPECT_FALSE(differ(first, run(0)));
  EXPECT_TRUE(differ(first, run(1)));
  EXPECT_TRUE(differ(first, original));
}

TEST(AugMix, WritesOnlyTheViewItIsGiven) {
  const AugMix policy;
  cv::Mat canvas(80, 100, CV_8UC3, cv::Scalar(7, 7, 7));
  cv::Mat view = canvas(cv::Rect(10, 20, 64, 48));
  test_image().copyTo(view);
  const cv::Mat before = canvas.clone();
  KeyedRng rng({kSeed, kEpoch, 5});
  policy.run(view, rng);
  cv::Mat outside = canvas.clone();
  cv::Mat outside_before = before.clone();
  outside(cv::Rect(10, 20, 64, 48)).setTo(0);
  outside_before(cv::Rect(10, 20, 64, 48)).setTo(0);
  EXPECT_FALSE(differ(outside, outside_before));
  EXPECT_TRUE(differ(canvas, before));
}

}  // namespace
}  // namespace forkfeed::augment
