// FairShare: attach, detach.
#include "workers/fair_share.h"

#include <algorithm>

namespace forkfeed {

void FairShare::add(std::uint64_t loader, std::uint32_t weight) {
  entries_.push_back(Entry{.loader = loader, .weight = std::max(1u, weight)});
}

void FairShare::remove(std::uint64_t loader) {
  std::erase_if(entries_, [loader](const Entry& e) { return e.loader == loader; });
  if (current_ == loader) current_.reset();
}

}  // namespace forkfeed
