// The fields of LoaderStats, each named once. Python's Loader.stats() and Client.stats(),
// forkfeedd's stream stats (and the Client that reads them back) go through this list,
// so every face gives the same keys and a new field is a line here.
#pragma once

#include "forkfeed/loader.h"

namespace forkfeed {

// Calls visit(name, field) for every field of `s` (a LoaderStats, const or not), in the
// order of its declaration.
template <typename Stats, typename Visit>
void for_each_stat(Stats& s, Visit&& visit) {
  visit("delivered_batches", s.delivered_batches);
  visit("delivered_samples", s.delivered_samples);
  visit("skipped_samples", s.skipped_samples);
  visit("skipped_bytes", s.skipped_bytes);
  visit("worker_restarts", s.worker_restarts);
  visit("start_method", s.start_method);
  visit("arena_bytes", s.arena_bytes);
  visit("index_bytes", s.index_bytes);
  visit("slots", s.slots);
  visit("pinned", s.pinned);
  visit("worker_ns", s.worker_ns);
  visit("wait_ns", s.wait_ns);
}

// Stops compiling when LoaderStats gains or loses a field: name it in for_each_stat()
// above, then count it here.
inline void every_loader_stat_is_named(LoaderStats& s) {
  [[maybe_unused]] auto& [delivered_batches, delivered_samples, skipped_samples, skipped_bytes,
                          worker_restarts, start_method, arena_bytes, index_bytes, slots, pinned, worker_ns,
                          wait_ns] = s;
}

}  // namespace forkfeed
