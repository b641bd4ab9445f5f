// small_arena(): the shared memory arena of a loader with eval uint8 samples of
// `size` x `size` px over `index`, for the suites that play the orchestrator or the
// workers themselves; a failure to make it fails the test, naming why.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "transport/arena.h"

namespace forkfeed::testing {

inline std::shared_ptr<Arena> small_arena(const DatasetIndex& index, std::uint32_t workers,
                                          std::uint32_t slots, std::uint32_t batch, std::uint32_t size,
                                          OnError on_error) {
  TransformSpec t{};
  std::strcpy(t.pipeline, "eval");
  t.dtype = DType::kUint8;
  t.size = size;
  auto arena =
      Arena::create(ArenaSpec{workers, slots, batch, std::uint64_t{size} * size * 3, t, on_error}, index);
  EXPECT_TRUE(arena.ok()) << "Arena::create: " << arena.status().message();
  return arena.ok() ? std::move(arena).value() : nullptr;
}

}  // namespace forkfeed::testing
