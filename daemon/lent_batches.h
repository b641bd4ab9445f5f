// LentBatches: the batches a session has pushed to its client and not got back. Each
// holds its slot out of the loader's pool until the client returns it by handle and tag
// through the returns ring — which the client writes, so a return is only a request:
// one for a handle out of range, not lent, or with another tag is ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "forkfeed/batch.h"

namespace forkfeed {

class LentBatches {
 public:
  // Room for `slots` batches: every slot of the loader.
  explicit LentBatches(std::uint32_t slots) : lent_(slots) {}

  bool full() const { return count_ == lent_.size(); }
  std::uint32_t count() const { return count_; }
  std::uint32_t capacity() const { return static_cast<std::uint32_t>(lent_.size()); }

  struct Ticket {
    std::uint32_t handle;
    std::uint64_t tag;
  };
  // Keeps `batch` until it is returned. REQUIRES: !full()
  Ticket lend(Batch batch);
  // Releases the batch lent under `handle` and `tag`; false (and nothing happens) if
  // there is none.
  bool give_back(std::uint32_t handle, std::uint64_t tag);

 private:
  struct Lent {
    Batch batch;
    std::uint64_t tag;
  };
  std::vector<std::optional<Lent>> lent_;
  std::uint32_t count_ = 0;
  std::uint64_t next_tag_ = 1;
};

}  // namespace forkfeed
