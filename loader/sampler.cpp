// Sampler: seeded Fisher-Yates shuffle, then DistributedSampler-style sharding.
#include "loader/sampler.h"

#include <algorithm>
#include <numeric>

#include "base/keyed_rng.h"

namespace forkfeed {

Sampler::Sampler(const SamplerSpec& spec) : spec_(spec) {
  const std::uint64_t n = spec.dataset_size, w = spec.world_size;
  per_rank_ = spec.drop_last ? n / w : (n + w - 1) / w;
}

std::uint64_t Sampler::batches_per_epoch() const {
  const std::uint64_t b = spec_.batch_size;
  return spec_.drop_last ? per_rank_ / b : (per_rank_ + b - 1) / b;
}

std::vector<std::uint64_t> Sampler::epoch_order(std::uint64_t epoch) const {
  const std::uint64_t n = spec_.dataset_size;
  std::vector<std::uint64_t> all(n);
  std::iota(all.begin(), all.end(), std::uint64_t{0});
  if (spec_.shuffle) {
    KeyedRng rng({spec_.seed, epoch, 0x5348554646ULL /* "SHUFF" */});
    for (std::uint64_t i = n; i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
  }
  // rank r takes positions r, r + W, r + 2W, ... of the padded (or truncated) order.
  std::vector<std::uint64_t> mine;
  mine.reserve(per_rank_);
  for (std::uint64_t k = 0; k < per_rank_; ++k) {
    mine.push_back(all[(spec_.rank + k * spec_.world_size) % n]);
  }
  return mine;
}

std::span<const std::uint64_t> Sampler::batch(const std::vector<std::uint64_t>& order,
                                              std::uint64_t b) const {
  const std::uint64_t begin = b * spec_.batch_size;
  const std::uint64_t end = std::min<std::uint64_t>(begin + spec_.batch_size, order.size());
  return std::span<const std::uint64_t>(order).subspan(begin, end - begin);
}

}  // namespace forkfeed
