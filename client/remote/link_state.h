// LinkState: what the parts of one RemoteLink — its control channel, its UCX receiver and
// its thread — share: the link's one mutex and what it guards of the link's fate (lost or
// not, what was heard of the gateway, the news its waits wake for). One mutex for all, so
// that a call and the link's thread take turns on the whole link, never on half of it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "forkfeed/status.h"

namespace forkfeed {

struct LinkState {
  explicit LinkState(std::string daemon_address) : address(std::move(daemon_address)) {}

  // Ends the link with `message` as its error; the first error stays.
  Status fail(const std::string& message) {
    std::lock_guard lock(mu);
    if (lost.ok()) {
      lost = Status::Unavailable(message);
      news += 1;
    }
    return lost;
  }
  // fail(), saying which daemon was lost and `why`.
  Status lose(const std::string& why) {
    return fail("lost the connection to the remote forkfeedd at " + address + ": " + why);
  }

  const std::string address;  // the daemon's HOST:PORT, as the user gave it
  // The link's state, the worker and the control connection's writes, a thread at a time;
  // UCX calls back (UcxReceiver's handlers) only under it. Recursive: a call that holds it
  // calls others that take it too (service(), fail()).
  mutable std::recursive_mutex mu;
  Status lost;
  std::uint64_t heard = 0;  // messages read from the gateway so far: frames and deliveries
  std::uint64_t news = 0;   // moves on when something a wait may wait for happened
};

}  // namespace forkfeed
