// PassIterator: range-for over one pass of a batch source — a Loader, or a Client of
// forkfeedd. Each step releases the previous batch's slot, then waits for the next
// batch; errors are thrown as forkfeed::Error.
#pragma once

#include <optional>
#include <utility>

#include "forkfeed/batch.h"
#include "forkfeed/status.h"

namespace forkfeed {

// The end of a pass, for range-for.
struct PassEnd {};

template <typename Source>  // Source::next() -> Result<std::optional<Batch>>
class PassIterator {
 public:
  // Fetches the first batch. REQUIRES: `source` outlives the iterator.
  explicit PassIterator(Source* source) : source_(source) { ++*this; }

  Batch& operator*() { return *current_; }
  Batch* operator->() { return &*current_; }
  PassIterator& operator++() {
    current_.reset();  // give the slot back before waiting for the next batch
    auto next = source_->next();
    if (!next.ok()) throw Error(next.status());
    current_ = std::move(*next);
    return *this;
  }
  bool operator==(PassEnd) const { return !current_.has_value(); }

 private:
  Source* source_;
  std::optional<Batch> current_;
};

}  // namespace forkfeed
