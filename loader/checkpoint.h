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

// One line of JSON, version 2:
// {"forkfeed_state":2,"epoch":E,"position":P,"seed":S,"order":{"dataset":{"samples":N,
//  "names":"...","labels":"...","sizes":"...","range_samples":R,"ranges":"..."},
//  "rank":...,"world_size":...,"batch_size":...,"shuffle":...,"drop_last":...}}
std::string encode_checkpoint(const Checkpoint& checkpoint);

// Parses `state` and checks its key against `current`, this loader's. Errors are
// InvalidArgument: "not a forkfeed state: <why>" for anything that is not a complete
// state of version 1 or 2, else one naming every field that differs and what to resume
// with; `index`, the index `current` was made of, lets it name the files of samples that
// differ. A version-1 state (forkfeed before dataset identities) holds a digest of
// absolute paths and labels instead: it resumes where those are unchanged.
// Whether `position` lies within the epoch is left to the caller.
// A state is about a KiB; a larger one is the wrong thing, refused unread.
inline constexpr std::size_t kMaxStateBytes = 64 * 1024;

Result<Checkpoint> decode_checkpoint(std::string_view state, const OrderKey& current,
                                     const DatasetIndex* index = nullptr);

}  // namespace forkfeed
