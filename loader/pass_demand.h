// PassDemand: a pass on demand (forkfeedd serving a fan-in client, which asks each daemon
// for the batches it chose): the batches wanted of it, in the order wanted, with two
// cursors over that one list. The issue cursor says which batch goes to a worker next
// (the Dispatcher moves it), the deliver cursor which one the caller is handed next (the
// Loader moves it, on delivery only, as PassPosition does for a whole pass). A pure value
// beside PassPosition: it decides, its owners act.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "forkfeed/status.h"

namespace forkfeed {

class PassDemand {
 public:
  // REQUIRES: batches_per_epoch > 0
  explicit PassDemand(std::uint64_t batches_per_epoch) : batches_per_epoch_(batches_per_epoch) {}

  // Adds `batch` at the end of the list. InvalidArgument, and nothing added, for a batch
  // past the epoch's end. A batch may be wanted again (a fan-in client asks anew after a
  // daemon's failover); each want is issued and delivered once.
  Status want(std::uint64_t batch);

  // The next wanted batch not issued yet, if any.
  std::optional<std::uint64_t> to_issue() const;
  // REQUIRES: to_issue()
  void issued() { ++issued_; }

  // The next wanted batch not delivered yet, if any: issued or not (the caller waits for
  // it while it is being made).
  std::optional<std::uint64_t> to_deliver() const;
  // REQUIRES: to_deliver()
  void delivered();

  // Batches wanted and not yet delivered.
  std::size_t waiting() const { return wanted_.size(); }
  // Batches wanted and not yet issued.
  std::size_t unissued() const { return wanted_.size() - issued_; }

 private:
  std::uint64_t batches_per_epoch_;
  std::deque<std::uint64_t> wanted_;  // not yet delivered, in the order wanted
  std::size_t issued_ = 0;            // the first issued_ of wanted_ were issued
};

}  // namespace forkfeed
