// send_am: one active message out, its header (and data, if owned) kept alive until UCX
// is done with them, and `done` told how it ended — once, possibly before send_am returns.
#pragma once

#include <functional>
#include <string>

#include "remote/remote_wire.h"
#include "remote/ucx.h"

namespace forkfeed {

struct AmPayload {
  const void* data = nullptr;  // borrowed: valid until `done` runs (a registered slot)
  std::size_t bytes = 0;
  ucp_mem_h memh = nullptr;  // its registration, if any
  std::string owned;         // or data owned by the send (when `data` is null)
};

// `flags`: UCP_AM_SEND_FLAG_EAGER for small messages, _RNDV for a batch from its slot.
void send_am(UcxWorker& worker, ucp_ep_h ep, unsigned id, const void* header, std::size_t header_bytes,
             AmPayload payload, std::uint32_t flags, std::function<void(ucs_status_t)> done = {});

}  // namespace forkfeed
