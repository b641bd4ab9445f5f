// FairShare: which of the loaders attached to a pool a worker serves next. Each loader
// has a virtual time, the worker time it got here divided by its weight; the next task
// comes from the loader with work and the least virtual time. A loader without work
// banks no credit (its virtual time follows the one served), so a share it leaves unused
// goes to the others at once and comes back to it with its next task; a loader that
// attaches starts level with the least served.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace forkfeed {

class FairShare {
 public:
  // A loader attaches with `weight` (at least 1).
  void add(std::uint64_t loader, std::uint32_t weight);
  void remove(std::uint64_t loader);
  // The loader to serve next among those `has_work(loader)` says have a task, or nullopt.
  template <typename HasWork>
  std::optional<std::uint64_t> next(HasWork&& has_work);
  // `loader`'s task took `ns` of this worker's time.
  void charge(std::uint64_t loader, std::uint64_t ns);

 private:
  struct Entry {
    std::uint64_t loader;
    std::uint32_t weight;
    double virtual_ns;
  };
  std::vector<Entry> entries_;
};

template <typename HasWork>
std::optional<std::uint64_t> FairShare::next(HasWork&& has_work) {
  Entry* best = nullptr;
  for (Entry& e : entries_) {
    if ((best == nullptr || e.virtual_ns < best->virtual_ns) && has_work(e.loader)) best = &e;
  }
  if (best == nullptr) return std::nullopt;
  for (Entry& e : entries_) {
    if (e.virtual_ns < best->virtual_ns && !has_work(e.loader)) e.virtual_ns = best->virtual_ns;
  }
  return best->loader;
}

}  // namespace forkfeed
