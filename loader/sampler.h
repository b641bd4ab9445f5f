// Sampler: which samples this rank reads in an epoch, in which order, cut into batches.
// The order is a pure function of (seed, epoch, rank, world size, dataset size);
// sharding follows PyTorch's DistributedSampler.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace forkfeed {

struct SamplerSpec {
  std::uint64_t dataset_size;
  std::uint64_t seed;
  std::uint32_t rank;
  std::uint32_t world_size;
  std::uint32_t batch_size;
  bool shuffle;
  // Without drop_last, the shuffled dataset is padded by wrapping around until it
  // divides among the ranks, and a last partial batch is kept. With it, the tail that
  // does not divide and the last partial batch are dropped.
  bool drop_last;
};

class Sampler {
 public:
  explicit Sampler(const SamplerSpec& spec);

  // Samples of this rank per epoch.
  std::uint64_t samples_per_epoch() const { return per_rank_; }
  std::uint64_t batches_per_epoch() const;
  // Dataset indices of this rank for `epoch`, in delivery order.
  std::vector<std::uint64_t> epoch_order(std::uint64_t epoch) const;
  // The samples of batch `b` within `order`.
  std::span<const std::uint64_t> batch(const std::vector<std::uint64_t>& order, std::uint64_t b) const;

 private:
  SamplerSpec spec_;
  std::uint64_t per_rank_;
};

}  // namespace forkfeed
