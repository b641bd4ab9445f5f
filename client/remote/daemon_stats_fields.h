// The fields of RemoteDaemonStats, each named once: Python's Client.daemons() and
// forkfeed-bench's JSON go through this list, so a new field is a line here.
#pragma once

#include "forkfeed/client.h"

namespace forkfeed {

// Calls visit(name, field) for every field of `d` (a RemoteDaemonStats, const or not), in
// the order of its declaration.
template <typename Stats, typename Visit>
void for_each_daemon_stat(Stats& d, Visit&& visit) {
  visit("address", d.address);
  visit("up", d.up);
  visit("stalled", d.stalled);
  visit("batches", d.batches);
  visit("bytes", d.bytes);
  visit("wait_ns", d.wait_ns);
  visit("reassigned", d.reassigned);
  visit("duplicates", d.duplicates);
  visit("losses", d.losses);
  visit("last_error", d.last_error);
}

// Stops compiling when RemoteDaemonStats gains or loses a field: name it in
// for_each_daemon_stat() above, then count it here.
inline void every_daemon_stat_is_named(RemoteDaemonStats& d) {
  [[maybe_unused]] auto& [address, up, stalled, batches, bytes, wait_ns, reassigned, duplicates, losses,
                          last_error] = d;
}

}  // namespace forkfeed
