// What the ops share of torchvision's ways (transforms/ops_*.cpp): torch's float32 bounds
// on what it draws, ranges read and checked as torchvision reads them, and its coin.
#pragma once

#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "base/keyed_rng.h"
#include "transforms/functional.h"
#include "transforms/op_args.h"

namespace forkfeed {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
// torchvision draws every random parameter in float32 (torch.empty(1).uniform_(lo, hi)),
// and torch refuses a range whose ends float32 cannot hold, or wider than its largest
// number: such an op fails at torchvision's first sample ("from is out of bounds for
// float"); here it is refused when the pipeline is read, with the allowed range.
inline constexpr double kFloatMax = std::numeric_limits<float>::max();
// And a parameter that must be positive (a blur's sigma, an affine scale) must stay so in
// float32: torch draws 1e-300 as 0 and raises at the first sample ("should be positive");
// accepted, it gave all-black samples. Its smallest normal number is the least taken.
inline constexpr double kFloatMin = std::numeric_limits<float>::min();

// A range to draw from, checked as torch checks it (its ends are in [-kFloatMax, kFloatMax]).
inline std::array<double, 2> drawn(OpArgs& a, std::string_view name, std::array<double, 2> range) {
  if (range[1] - range[0] > kFloatMax) {
    a.fail(name,
           "spans more than 3.4e38, the largest float32: torchvision draws from it in float32 and refuses "
           "a wider range");
  }
  return range;
}

// torch.rand(1) < p.
inline bool draw(KeyedRng& rng, double p) { return rng.uniform(0.0, 1.0) < p; }

// torchvision's ranges: a pair with min <= max.
inline std::array<double, 2> pair_of(OpArgs& a, std::string_view name, std::array<double, 2> fallback,
                                     double lo, double hi) {
  const auto v = a.numbers(name, 2, 2, lo, hi);
  if (!v) return fallback;
  if (v->size() != 2 || (*v)[0] > (*v)[1]) {
    a.fail(name, "must be a tuple (min, max) with min <= max");
    return fallback;
  }
  return {(*v)[0], (*v)[1]};
}

// Reads padding_mode, torchvision's: an op that `pads` takes "constant" (its fill) only.
inline void constant_padding(OpArgs& a, bool pads) {
  const std::string mode = a.word("padding_mode", "constant", {"constant", "edge", "reflect", "symmetric"});
  if (mode != "constant" && pads) {
    a.fail("padding_mode",
           "'" + mode + "' is not supported: forkfeed pads with fill (padding_mode='constant')");
  }
}

}  // namespace forkfeed
