// Checkpoint: the serialisable position of a loader (invariant 3), and the key that a
// resumed loader must share with the one that took it, since the order depends on it (invariant 4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dataset/dataset_digest.h"
#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

// Everything that decides which samples come in which batch, except the epoch. Worker
// count, prefetch and transforms are not part of it: they never change the order.
struct OrderKey {
  std::uint64_t dataset_size = 0;
  // dataset_digest() of the index: kDigestDigits lowercase hex digits.
  std::string dataset_digest;
  std::uint64_t seed = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::uint32_t batch_size = 0;
  bool shuffle = true;
  bool drop_last = false;

  bool operator==(const OrderKey&) const = default;
};

// The key of a loader over `index` with `options`. It hashes the whole index: compute it
// once per loader, not per state().
OrderKey order_key(const DatasetIndex& index, const LoaderOptions& options);

struct Checkpoint {
  std::uint64_t epoch = 0;
  std::uint64_t position = 0;  // batches delivered in the pass of `epoch`
  OrderKey key;
};

// One line of JSON:
// {"forkfeed_state":1,"epoch":E,"position":P,"seed":S,"order":{"dataset_size":...,
//  "dataset_digest":"...","rank":...,"world_size":...,"batch_size":...,"shuffle":...,"drop_last":...}}
std::string encode_checkpoint(const Checkpoint& checkpoint);

// Parses `state` and checks its key against `current`, this loader's. Errors are
// InvalidArgument: "not a forkfeed state: <why>" for anything that is not a complete
// version-1 state, else one naming every field that differs and what to resume with.
// Whether `position` lies within the epoch is left to the caller.
// A state is a few hundred bytes; a larger one is the wrong thing, refused unread.
inline constexpr std::size_t kMaxStateBytes = 64 * 1024;

Result<Checkpoint> decode_checkpoint(std::string_view state, const OrderKey& current);

}  // namespace forkfeed
