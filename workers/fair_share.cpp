// FairShare: attach, detach, charge.
#include "workers/fair_share.h"

#include <algorithm>

namespace forkfeed {

void FairShare::add(std::uint64_t loader, std::uint32_t weight) {
  double level = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    level = i == 0 ? entries_[i].virtual_ns : std::min(level, entries_[i].virtual_ns);
  }
  entries_.push_back(Entry{loader, std::max(1u, weight), level});
}

void FairShare::remove(std::uint64_t loader) {
  std::erase_if(entries_, [loader](const Entry& e) { return e.loader == loader; });
}

void FairShare::charge(std::uint64_t loader, std::uint64_t ns) {
  for (Entry& e : entries_) {
    if (e.loader == loader) e.virtual_ns += static_cast<double>(ns) / e.weight;
  }
}

}  // namespace forkfeed
