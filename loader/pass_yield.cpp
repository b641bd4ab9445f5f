// PassYield: the error of a pass of which every sample was skipped (loader/pass_yield.h).
#include "loader/pass_yield.h"

#include <string>

namespace forkfeed {

Status PassYield::at_end(std::uint64_t epoch, Counts so_far) const {
  const std::uint64_t delivered = so_far.delivered - at_start_.delivered;
  const std::uint64_t skipped = so_far.skipped - at_start_.skipped;
  if (!whole_ || delivered > 0 || skipped == 0) return Status::Ok();
  return Status::BadData("every sample of epoch " + std::to_string(epoch) + "'s pass was skipped (" +
                         std::to_string(skipped) +
                         " of this rank's share, on_error=skip): nothing was delivered. The loader's log "
                         "(forkfeedd's, for a Client) "
                         "names each file and why; when every file fails alike, the transform, max_pixels or "
                         "max_file_bytes do not fit "
                         "this dataset. The next call goes on with the next epoch");
}

}  // namespace forkfeed
