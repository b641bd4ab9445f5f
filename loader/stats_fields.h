// The fields of LoaderStats, each named once with its merge rule. Python's Loader.stats()
// and Client.stats(), forkfeedd's stream stats (and the Client that reads them back), a
// fan-in Client's sum over its daemons and forkfeed-bench's JSON go through this list, so
// every face gives the same keys and a new field is a line here.
#pragma once

#include <type_traits>
#include <vector>

#include "forkfeed/loader.h"

namespace forkfeed {

// How a Client over several streams (a fan-in over daemons) makes one stat of theirs.
// kSum: their sum (what the streams hold or did together). kFirst: the first stream's.
// kClient: none of theirs: the Client's own count of what its caller consumed.
enum class StatMerge { kSum, kFirst, kClient };

namespace stats_fields_detail {
// A visitor may take the merge rule or leave it out.
template <typename Visit, typename Field>
void visit(Visit& v, const char* name, Field& field, StatMerge merge) {
  if constexpr (std::is_invocable_v<Visit&, const char*, Field&, StatMerge>) {
    v(name, field, merge);
  } else {
    v(name, field);
  }
}
}  // namespace stats_fields_detail

// The table: calls visit(name, &LoaderStats::field, merge) for every field, in the order
// of its declaration. kSum only for integers.
template <typename Visit>
void for_each_stat_member(Visit&& visit) {
  using enum StatMerge;
  visit("delivered_batches", &LoaderStats::delivered_batches, kClient);
  visit("delivered_samples", &LoaderStats::delivered_samples, kClient);
  // The index's skips, once, and those in what the caller consumed.
  visit("skipped_samples", &LoaderStats::skipped_samples, kClient);
  visit("skipped_bytes", &LoaderStats::skipped_bytes, kClient);
  visit("worker_restarts", &LoaderStats::worker_restarts, kSum);
  visit("start_method", &LoaderStats::start_method, kFirst);
  visit("arena_bytes", &LoaderStats::arena_bytes, kSum);
  visit("index_bytes", &LoaderStats::index_bytes, kSum);
  visit("slots", &LoaderStats::slots, kSum);
  visit("pinned", &LoaderStats::pinned, kClient);  // whether the Client's own memory is page-locked
  visit("worker_ns", &LoaderStats::worker_ns, kSum);
  visit("wait_ns", &LoaderStats::wait_ns, kSum);
  visit("dropped_boxes", &LoaderStats::dropped_boxes, kSum);
  visit("copied_batches", &LoaderStats::copied_batches, kClient);  // the caller's batches copied aside
  visit("copied_bytes", &LoaderStats::copied_bytes, kClient);
}

// Calls visit(name, field[, merge]) for every field of `s` (a LoaderStats, const or not),
// in the order of its declaration.
template <typename Stats, typename Visit>
void for_each_stat(Stats& s, Visit&& visit) {
  for_each_stat_member([&](const char* name, auto member, StatMerge merge) {
    stats_fields_detail::visit(visit, name, s.*member, merge);
  });
}

// The stats of one Client over several streams (a fan-in), from each stream's in order,
// by each field's rule; kClient fields stay as a default LoaderStats has them, for the
// Client to fill. No streams: a default LoaderStats.
inline LoaderStats merge_stats(const std::vector<LoaderStats>& streams) {
  LoaderStats total;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    for_each_stat_member([&](const char*, auto member, StatMerge merge) {
      using T = std::remove_cvref_t<decltype(total.*member)>;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (merge == StatMerge::kSum) total.*member += streams[i].*member;
      }
      if (merge == StatMerge::kFirst && i == 0) total.*member = streams[i].*member;
    });
  }
  return total;
}

// Stops compiling when LoaderStats gains or loses a field: name it in for_each_stat()
// above, then count it here.
inline void every_loader_stat_is_named(LoaderStats& s) {
  [[maybe_unused]] auto& [delivered_batches, delivered_samples, skipped_samples, skipped_bytes,
                          worker_restarts, start_method, arena_bytes, index_bytes, slots, pinned, worker_ns,
                          wait_ns, dropped_boxes, copied_batches, copied_bytes] = s;
}

}  // namespace forkfeed
