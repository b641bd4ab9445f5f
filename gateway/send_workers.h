// SendWorkers: forkfeed-gateway's UCX workers, one per tcp segment it sends in. UCX's tcp
// transport sends a batch in fragments as large as its own receive segment and aborts a
// receiver whose segment is smaller (remote/ucx.h), and the segment is fixed when a
// context is made: so a client that receives in kLargeTcpSegment (a trainer of this
// forkfeed, which says so in its hello) is served from a worker of that segment, made
// when the first such client comes, and every other client from the gateway's own, as
// before. A client that says it receives in less than a worker would send is refused
// with a message, not left to UCX's abort.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "forkfeed/status.h"
#include "remote/ucx.h"

namespace forkfeed {

class SendWorkers {
 public:
  // With the gateway's own worker, at UCX's settings (UCX_TCP_RX_SEG_SIZE where set).
  static Result<SendWorkers> create();

  // The worker to send to a client that receives tcp segments of `segment` bytes
  // (nullopt: it did not say, an older forkfeed or no tcp); FailedPrecondition, naming
  // what to set, where no worker of this gateway sends in segments that small.
  Result<UcxWorker*> for_client(std::optional<std::uint64_t> segment);

  const UcxApi& api() const { return workers_.front()->api(); }
  // Each worker's progress(), until none has anything left.
  void progress();
  // Arms every worker's event fd: false if one has work again (progress, then arm again).
  bool arm();
  // The workers' event fds, to poll once armed.
  std::vector<int> event_fds() const;

 private:
  SendWorkers() = default;
  std::vector<std::unique_ptr<UcxWorker>> workers_;  // the gateway's own first
};

}  // namespace forkfeed
