// The AutoAugment family's policies (augment.h): what each draws, in the order and with
// the float32 magnitude tables of torchvision 0.14's autoaugment.py, and AugMix's mixing.
// The ops themselves are augment_ops.cpp's apply().
#include "transforms/augment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>

namespace forkfeed::augment {
namespace {

// How an op's magnitudes lie over its bins (one entry of torchvision's
// _augmentation_space): none (torch.tensor(0.0)), torch.linspace(from, to, bins), or
// Posterize's `from - round(arange(bins) / ((bins - 1) / to)).int()`.
enum class Scale { kNone, kLinear, kPosterize };

struct OpRange {
  Op op;
  Scale scale;
  double from;
  double to;
  bool is_signed;
};

OpRange plain(Op op) { return {op, Scale::kNone, 0, 0, false}; }
OpRange linear(Op op, double from, double to) { return {op, Scale::kLinear, from, to, true}; }
// Solarize's thresholds are the one unsigned linspace.
OpRange solarize() { return {Op::kSolarize, Scale::kLinear, 255.0, 0.0, false}; }
OpRange posterize(double top, double steps) { return {Op::kPosterize, Scale::kPosterize, top, steps, false}; }

// torch.linspace(from, to, steps)[i] in float32, bit for bit as torch 1.13's CPU kernel
// makes it where it runs AVX2 code (this machine's torch): the first steps / 16 * 16
// values in vectors of 8 lanes, lane k at base + k * step after a fused multiply-add for
// the vector's base (from the start in the first half, from the end in the second), the
// rest one by one, fused. The plain formula differs in the last bit now and then, and that bit
// decides on which side of a pixel value a Solarize threshold falls, or where int()
// truncates a translation.
float linspace(double from, double to, int steps, int i) {
  const auto start = static_cast<float>(from);
  const auto end = static_cast<float>(to);
  const float step = (end - start) / static_cast<float>(steps - 1);
  const auto from_the_ends = [&](int at) {
    return at < steps / 2 ? std::fma(step, static_cast<float>(at), start)
                          : std::fma(-step, static_cast<float>(steps - at - 1), end);
  };
  constexpr int kLanes = 8;
  if (i >= steps / (2 * kLanes) * (2 * kLanes)) {
    return from_the_ends(i);
  }
  const int lane = i % kLanes;
  return from_the_ends(i - lane) + static_cast<float>(lane) * step;
}

// arange / python float is a float32 division; torch.round rounds half to even, as
// nearbyint does in the default rounding mode.
int posterize_bits(double top, double steps, int bins, int i) {
  const auto divisor = static_cast<float>((bins - 1) / steps);
  return static_cast<int>(top) - static_cast<int>(std::nearbyint(static_cast<float>(i) / divisor));
}

// The op at `bin` of `bins`, unsigned: `float(magnitudes[bin].item())`.
DrawnOp at_bin(const OpRange& range, int bins, int bin) {
  switch (range.scale) {
    case Scale::kNone: return {range.op, 0.0, -1};
    case Scale::kLinear: return {range.op, linspace(range.from, range.to, bins, bin), bin};
    case Scale::kPosterize:
      return {range.op, static_cast<double>(posterize_bits(range.from, range.to, bins, bin)), bin};
  }
  return {range.op, 0.0, -1};
}

// RandAugment's space, which TrivialAugmentWide and AutoAugment share but for their
// ranges. `image_size` in torch's (height, width) order is why X uses the width.
std::array<OpRange, 14> rand_augment_space(int width, int height) {
  return {plain(Op::kIdentity),
          linear(Op::kShearX, 0.0, 0.3),
          linear(Op::kShearY, 0.0, 0.3),
          linear(Op::kTranslateX, 0.0, 150.0 / 331.0 * width),
          linear(Op::kTranslateY, 0.0, 150.0 / 331.0 * height),
          linear(Op::kRotate, 0.0, 30.0),
          linear(Op::kBrightness, 0.0, 0.9),
          linear(Op::kColor, 0.0, 0.9),
          linear(Op::kContrast, 0.0, 0.9),
          linear(Op::kSharpness, 0.0, 0.9),
          posterize(8, 4),
          solarize(),
          plain(Op::kAutoContrast),
          plain(Op::kEqualize)};
}

std::array<OpRange, 14> trivial_augment_space() {
  return {plain(Op::kIdentity),
          linear(Op::kShearX, 0.0, 0.99),
          linear(Op::kShearY, 0.0, 0.99),
          linear(Op::kTranslateX, 0.0, 32.0),
          linear(Op::kTranslateY, 0.0, 32.0),
          linear(Op::kRotate, 0.0, 135.0),
          linear(Op::kBrightness, 0.0, 0.99),
          linear(Op::kColor, 0.0, 0.99),
          linear(Op::kContrast, 0.0, 0.99),
          linear(Op::kSharpness, 0.0, 0.99),
          posterize(8, 6),
          solarize(),
          plain(Op::kAutoContrast),
          plain(Op::kEqualize)};
}

// AugMix's own order (the four colour ops last, only with all_ops), which decides what
// an op index drawn from the rng names.
std::vector<OpRange> aug_mix_space(int width, int height, bool all_ops) {
  std::vector<OpRange> space = {linear(Op::kShearX, 0.0, 0.3),
                                linear(Op::kShearY, 0.0, 0.3),
                                linear(Op::kTranslateX, 0.0, width / 3.0),
                                linear(Op::kTranslateY, 0.0, height / 3.0),
                                linear(Op::kRotate, 0.0, 30.0),
                                posterize(4, 4),
                                solarize(),
                                plain(Op::kAutoContrast),
                                plain(Op::kEqualize)};
  if (all_ops) {
    for (Op op : {Op::kBrightness, Op::kColor, Op::kContrast, Op::kSharpness}) {
      space.push_back(linear(op, 0.0, 0.9));
    }
  }
  return space;
}

// One sub-policy op: (op name, probability, magnitude_id), magnitude_id -1 for None.
struct PolicyOp {
  Op op;
  double probability;
  int magnitude_id;
};
using SubPolicy = std::array<PolicyOp, 2>;

constexpr std::array<SubPolicy, 25> kImageNetPolicy = {{
    {{{Op::kPosterize, 0.4, 8}, {Op::kRotate, 0.6, 9}}},
    {{{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, -1}}},
    {{{Op::kEqualize, 0.8, -1}, {Op::kEqualize, 0.6, -1}}},
    {{{Op::kPosterize, 0.6, 7}, {Op::kPosterize, 0.6, 6}}},
    {{{Op::kEqualize, 0.4, -1}, {Op::kSolarize, 0.2, 4}}},
    {{{Op::kEqualize, 0.4, -1}, {Op::kRotate, 0.8, 8}}},
    {{{Op::kSolarize, 0.6, 3}, {Op::kEqualize, 0.6, -1}}},
    {{{Op::kPosterize, 0.8, 5}, {Op::kEqualize, 1.0, -1}}},
    {{{Op::kRotate, 0.2, 3}, {Op::kSolarize, 0.6, 8}}},
    {{{Op::kEqualize, 0.6, -1}, {Op::kPosterize, 0.4, 6}}},
    {{{Op::kRotate, 0.8, 8}, {Op::kColor, 0.4, 0}}},
    {{{Op::kRotate, 0.4, 9}, {Op::kEqualize, 0.6, -1}}},
    {{{Op::kEqualize, 0.0, -1}, {Op::kEqualize, 0.8, -1}}},
    {{{Op::kInvert, 0.6, -1}, {Op::kEqualize, 1.0, -1}}},
    {{{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}}},
    {{{Op::kRotate, 0.8, 8}, {Op::kColor, 1.0, 2}}},
    {{{Op::kColor, 0.8, 8}, {Op::kSolarize, 0.8, 7}}},
    {{{Op::kSharpness, 0.4, 7}, {Op::kInvert, 0.6, -1}}},
    {{{Op::kShearX, 0.6, 5}, {Op::kEqualize, 1.0, -1}}},
    {{{Op::kColor, 0.4, 0}, {Op::kEqualize, 0.6, -1}}},
    {{{Op::kEqualize, 0.4, -1}, {Op::kSolarize, 0.2, 4}}},
    {{{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, -1}}},
    {{{Op::kInvert, 0.6, -1}, {Op::kEqualize, 1.0, -1}}},
    {{{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}}},
    {{{Op::kEqualize, 0.8, -1}, {Op::kEqualize, 0.6, -1}}},
}};

// AutoAugment looks its ops up by name; Invert, the one not in RandAugment's space, has
// no magnitudes.
OpRange range_of(const std::array<OpRange, 14>& space, Op op) {
  const auto* found = std::find_if(space.begin(), space.end(), [op](const OpRange& r) { return r.op == op; });
  return found != space.end() ? *found : plain(op);
}

// RandAugment, TrivialAugmentWide and AugMix draw the sign only for a signed op, and
// negate on a 1 (AutoAugment draws both signs up front and negates on a 0).
void draw_sign(KeyedRng& rng, const OpRange& range, DrawnOp& drawn) {
  if (range.is_signed && rng.below(2) == 1) {
    drawn.magnitude *= -1.0;
  }
}

int below(KeyedRng& rng, std::size_t n) { return static_cast<int>(rng.below(n)); }

void apply_all(cv::Mat& img, const std::vector<DrawnOp>& ops, fn::Interpolation interpolation,
               const fn::Fill& fill, fn::Moves* moves) {
  for (const DrawnOp& op : ops) {
    apply(img, op, interpolation, fill, moves);
  }
}

// Gamma(alpha, 1) as torch's sample_gamma draws it: Marsaglia and Tsang's rejection, with
// alpha < 1 boosted to alpha + 1 and scaled back by u^(1/alpha).
double gamma(KeyedRng& rng, double alpha) {
  double scale = 1.0;
  if (alpha < 1.0) {
    if (alpha == 0.0) {
      return 0.0;
    }
    scale = std::pow(1.0 - rng.uniform(0, 1), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0;
    double y = 0;
    do {
      x = rng.normal();
      y = 1.0 + c * x;
    } while (y <= 0);
    const double v = y * y * y;
    const double u = 1.0 - rng.uniform(0, 1);
    const double xx = x * x;
    if (u < 1.0 - 0.0331 * xx * xx || std::log(u) < 0.5 * xx + d * (1.0 - v + std::log(v))) {
      return scale * d * v;
    }
  }
}

// torch._sample_dirichlet for float32: gammas in double (at least DBL_MIN), normalised
// in double, cast to float and kept within [FLT_MIN, the float below 1].
std::vector<float> dirichlet(KeyedRng& rng, double alpha, int n) {
  std::vector<double> gammas(static_cast<std::size_t>(n));
  double sum = 0;
  for (double& g : gammas) {
    g = std::max(std::numeric_limits<double>::min(), gamma(rng, alpha));
    sum += g;
  }
  std::vector<float> weights;
  for (double g : gammas) {
    weights.push_back(std::clamp(static_cast<float>(g / sum), std::numeric_limits<float>::min(),
                                 std::nextafter(1.0f, 0.0f)));
  }
  return weights;
}

// One AugMix chain applied to a copy of the original: depth ops, each with a bin below
// `severity` of the 10-bin space.
cv::Mat run_chain(const cv::Mat& original, KeyedRng& rng, const AugMix& policy,
                  const std::vector<OpRange>& space) {
  cv::Mat aug = original.clone();
  const int depth = policy.chain_depth > 0 ? policy.chain_depth : 1 + below(rng, 3);
  for (int i = 0; i < depth; ++i) {
    const OpRange& range = space[rng.below(space.size())];
    const int bin = range.scale == Scale::kNone ? 0 : below(rng, static_cast<std::size_t>(policy.severity));
    DrawnOp drawn = at_bin(range, 10, bin);
    draw_sign(rng, range, drawn);
    apply(aug, drawn, policy.interpolation, policy.fill);
  }
  return aug;
}

// mix += weight * aug, as torch's float32 `mix.add_(w * aug)`: the product is rounded
// before the sum.
void accumulate(cv::Mat& mix, const cv::Mat& aug, float weight) {
  for (int y = 0; y < aug.rows; ++y) {
    const auto* src = aug.ptr<std::uint8_t>(y);
    auto* dst = mix.ptr<float>(y);
    for (int x = 0; x < aug.cols * aug.channels(); ++x) {
      dst[x] += weight * static_cast<float>(src[x]);
    }
  }
}

// `.to(torch.uint8)`: truncation toward zero.
void truncate_into(const cv::Mat& mix, cv::Mat& img) {
  for (int y = 0; y < img.rows; ++y) {
    const auto* src = mix.ptr<float>(y);
    auto* dst = img.ptr<std::uint8_t>(y);
    for (int x = 0; x < img.cols * img.channels(); ++x) {
      dst[x] = static_cast<std::uint8_t>(src[x]);
    }
  }
}

}  // namespace

void AutoAugment::draw(KeyedRng& rng, int width, int height, std::vector<DrawnOp>& out) const {
  out.clear();
  // get_params: the sub-policy, then both probabilities, then both signs, all drawn.
  const SubPolicy& sub_policy = kImageNetPolicy[rng.below(kImageNetPolicy.size())];
  const std::array<double, 2> probs = {rng.uniform(0, 1), rng.uniform(0, 1)};
  const std::array<std::uint64_t, 2> signs = {rng.below(2), rng.below(2)};
  const auto space = rand_augment_space(width, height);
  for (std::size_t i = 0; i < sub_policy.size(); ++i) {
    const PolicyOp& policy_op = sub_policy[i];
    if (probs[i] > policy_op.probability) {
      continue;
    }
    const OpRange range = range_of(space, policy_op.op);
    DrawnOp drawn = policy_op.magnitude_id < 0 ? DrawnOp{policy_op.op, 0.0, -1}
                                               : at_bin(range, 10, policy_op.magnitude_id);
    if (range.is_signed && signs[i] == 0) {
      drawn.magnitude *= -1.0;
    }
    out.push_back(drawn);
  }
}

void AutoAugment::run(cv::Mat& img, KeyedRng& rng, std::vector<DrawnOp>& scratch, fn::Moves* moves) const {
  draw(rng, img.cols, img.rows, scratch);
  apply_all(img, scratch, interpolation, fill, moves);
}

void RandAugment::draw(KeyedRng& rng, int width, int height, std::vector<DrawnOp>& out) const {
  out.clear();
  const auto space = rand_augment_space(width, height);
  for (int i = 0; i < num_ops; ++i) {
    const OpRange& range = space[rng.below(space.size())];
    DrawnOp drawn = at_bin(range, num_magnitude_bins, magnitude);
    draw_sign(rng, range, drawn);
    out.push_back(drawn);
  }
}

void RandAugment::run(cv::Mat& img, KeyedRng& rng, std::vector<DrawnOp>& scratch, fn::Moves* moves) const {
  draw(rng, img.cols, img.rows, scratch);
  apply_all(img, scratch, interpolation, fill, moves);
}

void TrivialAugmentWide::draw(KeyedRng& rng, int /*width*/, int /*height*/, std::vector<DrawnOp>& out) const {
  out.clear();
  static const auto space = trivial_augment_space();
  const OpRange& range = space[rng.below(space.size())];
  // The bin is drawn only for an op with magnitudes.
  const int bin = range.scale == Scale::kNone ? 0 : below(rng, static_cast<std::size_t>(num_magnitude_bins));
  DrawnOp drawn = at_bin(range, num_magnitude_bins, bin);
  draw_sign(rng, range, drawn);
  out.push_back(drawn);
}

void TrivialAugmentWide::run(cv::Mat& img, KeyedRng& rng, std::vector<DrawnOp>& scratch,
                             fn::Moves* moves) const {
  draw(rng, img.cols, img.rows, scratch);
  apply_all(img, scratch, interpolation, fill, moves);
}

// forward(): the Beta weight of the original (a 2-way Dirichlet), the chains' Dirichlet
// weights scaled by the other half, then each chain from the original, all in float32.
void AugMix::run(cv::Mat& img, KeyedRng& rng) const {
  const std::vector<float> m = dirichlet(rng, alpha, 2);
  std::vector<float> weights = dirichlet(rng, alpha, mixture_width);
  for (float& w : weights) {
    w *= m[1];
  }
  const auto space = aug_mix_space(img.cols, img.rows, all_ops);
  const cv::Mat original = img.clone();
  cv::Mat mix(img.size(), CV_32FC(img.channels()), cv::Scalar::all(0));
  accumulate(mix, original, m[0]);
  for (float weight : weights) {
    accumulate(mix, run_chain(original, rng, *this, space), weight);
  }
  truncate_into(mix, img);
}

}  // namespace forkfeed::augment
