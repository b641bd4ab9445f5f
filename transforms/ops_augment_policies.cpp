// The AutoAugment family's ops: AutoAugment, RandAugment, TrivialAugmentWide and AugMix,
// each a policy of transforms/augment.h read from its arguments and run per sample.
#include <type_traits>
#include <vector>

#include "transforms/augment.h"
#include "transforms/op_draws.h"
#include "transforms/op_factories.h"

namespace forkfeed {
namespace {

using fn::Interpolation;

// The AutoAugment family: a policy struct of transforms/augment.h, run per sample.
template <typename Policy>
class Augment : public PixelOp {
 public:
  explicit Augment(Policy policy) : policy_(policy) {}
  void run(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves) override {
    if constexpr (std::is_same_v<Policy, augment::AugMix>) {
      policy_.run(sample, rng);
    } else {
      policy_.run(sample, rng, drawn_, moves);
    }
  }
  bool repeatable() const override { return !std::is_same_v<Policy, augment::AugMix>; }

 private:
  Policy policy_;
  std::vector<augment::DrawnOp> drawn_;  // reused across samples
};

template <typename Policy>
void read_common(OpArgs& a, Policy& p) {
  p.interpolation =
      a.interpolation("interpolation", p.interpolation, {Interpolation::kNearest, Interpolation::kBilinear});
  p.fill = a.fill("fill");
}

}  // namespace

std::unique_ptr<PixelOp> make_auto_augment(OpArgs& a) {
  augment::AutoAugment p;
  a.word("policy", "imagenet", {"imagenet"});
  read_common(a, p);
  return std::make_unique<Augment<augment::AutoAugment>>(p);
}

std::unique_ptr<PixelOp> make_rand_augment(OpArgs& a) {
  augment::RandAugment p;
  p.num_ops = a.integer("num_ops", 2, 0, 16);
  p.num_magnitude_bins = a.integer("num_magnitude_bins", 31, 2, 1000);
  p.magnitude = a.integer("magnitude", 9, 0, p.num_magnitude_bins - 1);
  read_common(a, p);
  return std::make_unique<Augment<augment::RandAugment>>(p);
}

std::unique_ptr<PixelOp> make_trivial_augment_wide(OpArgs& a) {
  augment::TrivialAugmentWide p;
  p.num_magnitude_bins = a.integer("num_magnitude_bins", 31, 2, 1000);
  read_common(a, p);
  return std::make_unique<Augment<augment::TrivialAugmentWide>>(p);
}

std::unique_ptr<PixelOp> make_aug_mix(OpArgs& a) {
  augment::AugMix p;
  p.severity = a.integer("severity", 3, 1, 10);
  p.mixture_width = a.integer("mixture_width", 3, 1, 16);
  p.chain_depth = a.integer("chain_depth", -1, -1, 16);
  if (p.chain_depth == 0) a.fail("chain_depth", "must be -1 (1 to 3 ops, drawn) or at least 1");
  p.alpha = a.number("alpha", 1.0, 0, kFloatMax);
  if (p.alpha <= 0) a.fail("alpha", "must be positive");
  p.all_ops = a.flag("all_ops", true);
  read_common(a, p);
  return std::make_unique<Augment<augment::AugMix>>(p);
}

}  // namespace forkfeed
