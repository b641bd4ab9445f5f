// LentBatches: handles, tags and checked returns.
#include "daemon/lent_batches.h"

#include <algorithm>

namespace forkfeed {

LentBatches::Ticket LentBatches::lend(Batch batch) {
  const auto free = std::find_if(lent_.begin(), lent_.end(), [](const auto& l) { return !l.has_value(); });
  const Ticket ticket{static_cast<std::uint32_t>(free - lent_.begin()), next_tag_++};
  free->emplace(Lent{std::move(batch), ticket.tag});
  count_ += 1;
  return ticket;
}

bool LentBatches::give_back(std::uint32_t handle, std::uint64_t tag) {
  if (handle >= lent_.size() || !lent_[handle] || lent_[handle]->tag != tag) return false;
  lent_[handle].reset();  // the Batch goes: its slot returns to the loader's pool
  count_ -= 1;
  return true;
}

}  // namespace forkfeed
