// FairShare: which of the loaders attached to a pool a worker serves next, asked between
// samples, so that a loader whose tasks are long (a big batch, a costly pipeline) cannot
// hold the worker for a whole task.
//
// Each loader has a virtual time: the worker time the whole pool has spent on it (its
// samples done, and those in any worker's hands so far), divided by its weight. Of the
// loaders with work for this worker, the one with the least goes next. The time is the
// pool's, not this worker's: while another worker is busy with one loader's long sample,
// this one sees that loader's time grow and keeps serving the other, so that the pool's
// workers split between loaders instead of each taking every loader's turn in its own
// time (with samples of hundreds of milliseconds, both workers would then be in the same
// loader's samples at once half the time).
//
// Loaders with work take turns of about a slice: the loader in hand keeps the worker until
// it is half a slice of its own worker time ahead of another with work, so that the worker
// does not switch on every sample. A loader without work here keeps a bounded credit: its
// virtual time is raised to no more than `lag` behind the least of those with work. A
// stream that is empty for a moment (its few slots all in its trainer's hands) so keeps
// what it is owed, and one that comes back after a long pause takes the worker for at most
// about `lag` before the others have their turn again; what a loader leaves unused beyond
// that goes to the others for good. A loader that attaches starts level with the least.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace forkfeed {

class FairShare {
 public:
  // The turns of loaders with work (ns of worker time), and the credit kept by a loader
  // without work (ns of virtual time). Switching costs only a check between samples;
  // 10 ms is a few samples.
  static constexpr std::uint64_t kSliceNs = 10'000'000;
  static constexpr std::uint64_t kLagNs = 100'000'000;

  explicit FairShare(std::uint64_t slice_ns = kSliceNs, std::uint64_t lag_ns = kLagNs)
      : slice_ns_(static_cast<double>(slice_ns)), lag_ns_(static_cast<double>(lag_ns)) {}

  // A loader attaches with `weight` (at least 1).
  void add(std::uint64_t loader, std::uint32_t weight);
  void remove(std::uint64_t loader);
  // The loader to serve next among those `has_work(loader)` says have work here (a task
  // queued, or one set aside part-way), or nullopt. `served(loader)` is the worker time
  // (ns) the pool has spent on it so far. Asked again between samples: when the answer is
  // not the loader in hand, the worker sets its task aside.
  template <typename HasWork, typename Served>
  std::optional<std::uint64_t> next(HasWork&& has_work, Served&& served);

 private:
  struct Entry {
    std::uint64_t loader;
    std::uint32_t weight;
    double credit_ns = 0;   // added to its virtual time here: level at attach, the bounded credit
    bool level = false;     // set level with the others (at the first next() after add)
    double virtual_ns = 0;  // as the last next() found them
    bool has_work = false;
  };
  double slice_ns_;
  double lag_ns_;
  std::vector<Entry> entries_;
  std::optional<std::uint64_t> current_;  // the loader next() chose last
};

template <typename HasWork, typename Served>
std::optional<std::uint64_t> FairShare::next(HasWork&& has_work, Served&& served) {
  std::optional<double> least_level;
  for (Entry& e : entries_) {
    e.virtual_ns = static_cast<double>(served(e.loader)) / e.weight + e.credit_ns;
    if (e.level) least_level = std::min(least_level.value_or(e.virtual_ns), e.virtual_ns);
  }
  Entry* least = nullptr;
  Entry* current = nullptr;
  for (Entry& e : entries_) {
    if (!e.level) {  // a newcomer: level with the least, neither owed nor owing
      e.credit_ns += least_level.value_or(e.virtual_ns) - e.virtual_ns;
      e.virtual_ns = least_level.value_or(e.virtual_ns);
      e.level = true;
    }
    e.has_work = has_work(e.loader);
    if (!e.has_work) continue;
    if (least == nullptr || e.virtual_ns < least->virtual_ns) least = &e;
    if (current_ == e.loader) current = &e;
  }
  if (least == nullptr) return std::nullopt;
  for (Entry& e : entries_) {
    if (!e.has_work && e.virtual_ns < least->virtual_ns - lag_ns_) {
      e.credit_ns += least->virtual_ns - lag_ns_ - e.virtual_ns;
      e.virtual_ns = least->virtual_ns - lag_ns_;
    }
  }
  const bool keep =
      current != nullptr && (current->virtual_ns - least->virtual_ns) * current->weight <= slice_ns_ / 2;
  current_ = keep ? current->loader : least->loader;
  return current_;
}

}  // namespace forkfeed
