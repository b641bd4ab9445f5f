// Checkpoint: the serialisable position of a loader (invariant 3), with the OrderKey that
// a resumed loader must share with the one that took it (invariant 4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "forkfeed/status.h"
#include "loader/order_key.h"

namespace forkfeed {

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
