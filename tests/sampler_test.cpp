// Sampler: order is a pure function of its inputs; sharding follows DistributedSampler.
#include "loader/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace forkfeed {
namespace {

SamplerSpec spec(std::uint64_t n, std::uint32_t rank = 0, std::uint32_t world = 1, bool drop_last = false,
                 bool shuffle = true, std::uint32_t batch = 8, std::uint64_t seed = 42) {
  return SamplerSpec{n, seed, rank, world, batch, shuffle, drop_last};
}

TEST(Sampler, OneRankIsAPermutation) {
  const Sampler s(spec(1000));
  auto order = s.epoch_order(3);
  ASSERT_EQ(order.size(), 1000u);
  std::vector<std::uint64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint64_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_NE(order, all) << "shuffle=true must shuffle";
}

TEST(Sampler, OrderIsAPureFunctionOfSeedAndEpoch) {
  EXPECT_EQ(Sampler(spec(500)).epoch_order(1), Sampler(spec(500)).epoch_order(1));
  EXPECT_NE(Sampler(spec(500)).epoch_order(1), Sampler(spec(500)).epoch_order(2));
  EXPECT_NE(Sampler(spec(500, 0, 1, false, true, 8, 1)).epoch_order(1),
            Sampler(spec(500, 0, 1, false, true, 8, 2)).epoch_order(1));
}

TEST(Sampler, NoShuffleKeepsIndexOrder) {
  auto order = Sampler(spec(10, 0, 1, false, /*shuffle=*/false)).epoch_order(5);
  std::vector<std::uint64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(order, all);
}

TEST(Sampler, ShardsAreDisjointAndCoverWithWrapAroundPadding) {
  for (std::uint64_t n : {12u, 13u, 17u, 3u}) {
    const std::uint32_t world = 4;
    std::map<std::uint64_t, int> seen;
    const std::uint64_t per_rank = (n + world - 1) / world;
    for (std::uint32_t r = 0; r < world; ++r) {
      const Sampler s(spec(n, r, world));
      auto order = s.epoch_order(7);
      EXPECT_EQ(order.size(), per_rank) << "every rank gets the same count";
      for (auto i : order) seen[i]++;
    }
    EXPECT_EQ(seen.size(), n) << "the union covers the dataset";
    const std::uint64_t padding = per_rank * world - n;
    std::uint64_t repeats = 0;
    for (auto& [i, count] : seen) repeats += count - 1;
    EXPECT_EQ(repeats, padding) << "only the documented padding repeats samples";
  }
}

TEST(Sampler, PaddingRepeatsTheStartOfTheShuffledOrder) {
  // DistributedSampler: indices += indices[:padding]; rank r takes indices[r::W].
  const std::uint64_t n = 10;
  const std::uint32_t world = 4;  // total 12, padding 2
  const auto full = Sampler(spec(n)).epoch_order(0);
  for (std::uint32_t r = 0; r < world; ++r) {
    auto order = Sampler(spec(n, r, world)).epoch_order(0);
    for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], full[(r + k * world) % n]);
  }
}

TEST(Sampler, DropLastTruncatesTailAndPartialBatch) {
  const Sampler s(spec(10, 1, 4, /*drop_last=*/true, true, /*batch=*/2));
  EXPECT_EQ(s.samples_per_epoch(), 2u);
  EXPECT_EQ(s.batches_per_epoch(), 1u);
  std::set<std::uint64_t> all;
  for (std::uint32_t r = 0; r < 4; ++r) {
    for (auto i : Sampler(spec(10, r, 4, true)).epoch_order(0)) EXPECT_TRUE(all.insert(i).second);
  }
  EXPECT_EQ(all.size(), 8u);
  EXPECT_EQ(Sampler(spec(10, 0, 1, true, true, 3)).batches_per_epoch(), 3u);
  EXPECT_EQ(Sampler(spec(10, 0, 1, false, true, 3)).batches_per_epoch(), 4u);
}

TEST(Sampler, BatchesPartitionTheOrder) {
  const Sampler s(spec(23, 0, 1, false, true, 5));
  auto order = s.epoch_order(0);
  std::vector<std::uint64_t> joined;
  for (std::uint64_t b = 0; b < s.batches_per_epoch(); ++b) {
    auto batch = s.batch(order, b);
    EXPECT_EQ(batch.size(), b + 1 < s.batches_per_epoch() ? 5u : 3u);
    joined.insert(joined.end(), batch.begin(), batch.end());
  }
  EXPECT_EQ(joined, order);
}

}  // namespace
}  // namespace forkfeed
