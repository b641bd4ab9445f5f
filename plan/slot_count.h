// How many batch slots a loader's arena holds, and what they cost.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct ArenaSpec;

// Every worker may hold `prefetch` batches in flight, and the caller one more.
inline std::uint32_t slot_count(const LoaderOptions& o) { return o.workers * o.prefetch + 1; }
// Bytes of pixels in all slots together.
std::uint64_t arena_batch_bytes(const LoaderOptions& o);

// `bytes` in whole MiB, "12 MiB", for messages about slots.
std::string whole_mib(std::uint64_t bytes);

// The most a loader's batch slots may hold: half of this machine's memory (invariant 6:
// every byte of the arena is backed by memory, allocated when it is created).
std::uint64_t slot_memory_limit();

// What a schema's fields add to the slots is known once the index is (a text field's
// region holds the largest batch of its members): a budget takes those bytes, all slots
// together, with `what` naming the largest field, and refuses them naming its limit.
using FieldBytesBudget = std::function<Status(std::uint64_t field_bytes, const std::string& what)>;
// A Loader's own: its images' slots and the fields' within slot_memory_limit().
FieldBytesBudget memory_budget(const LoaderOptions& o);
// The bytes the fields of `spec` add to its slots, beyond its images and labels, charged
// to `budget`.
Status charge_field_bytes(const ArenaSpec& spec, const FieldBytesBudget& budget);

}  // namespace forkfeed
