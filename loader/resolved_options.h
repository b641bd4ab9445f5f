// ResolvedOptions: LoaderOptions that passed validation, as every later stage takes
// them. Checking the options builds the transform pipeline, which says what size and
// dtype a sample is; the check hands that answer on instead of throwing it away, so the
// options flow one way: checked and resolved once (in a Loader's open, forkfeedd's
// open_stream, forkfeed-bench's flags), then taken as they are by the Loader, the arena,
// admission and the reports.
#pragma once

#include <cstdint>
#include <utility>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

class ResolvedOptions {
 public:
  // Every option checked, the first problem an error naming the option and what to do
  // (what validate() says); else the options with size and dtype set to what their
  // transform makes.
  static Result<ResolvedOptions> of(const LoaderOptions& options);

  const LoaderOptions& options() const { return options_; }
  const LoaderOptions* operator->() const { return &options_; }

 private:
  explicit ResolvedOptions(LoaderOptions resolved) : options_(std::move(resolved)) {}
  LoaderOptions options_;
};

}  // namespace forkfeed
