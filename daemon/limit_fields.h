// The limits of forkfeedd, each named once: its key under `limits:` in the YAML config,
// its flag (the key with dashes: max_streams is --max-streams), and the help of both
// with the default. The config file, forkfeedd's flags and their --help read this list,
// so a new limit is a line here.
#pragma once

#include <string_view>

#include "daemon/config.h"

namespace forkfeed {

// How a limit's value is written: a whole number, bytes ("64G", parse_bytes) or
// milliseconds (a whole number).
enum class LimitKind { kCount, kBytes, kMilliseconds };

struct LimitField {
  std::string_view key;
  LimitKind kind;
  std::string_view help;
};

// Calls visit(field, value) for every limit of `config` (a DaemonConfig, const or not).
template <typename Config, typename Visit>
void for_each_limit(Config& config, Visit&& visit) {
  using enum LimitKind;
  visit(LimitField{"max_streams", kCount, "Streams served at once [default: 64]"}, config.limits.max_streams);
  visit(LimitField{"max_workers", kCount,
                   "Decode workers, one pool that every stream shares fairly [default: the CPU count]"},
        config.limits.max_workers);
  visit(LimitField{"max_stream_workers", kCount,
                   "Workers one stream may keep busy at once (tasks in flight: this x prefetch) [default: "
                   "max-workers]"},
        config.limits.max_stream_workers);
  visit(LimitField{"max_arena_bytes", kBytes,
                   "Batch slot memory of all streams, e.g. 64G [default: half of RAM]"},
        config.limits.max_arena_bytes);
  visit(LimitField{"max_stream_arena_bytes", kBytes,
                   "Batch slot memory of one stream [default: --max-arena-bytes]"},
        config.limits.max_stream_arena_bytes);
  visit(LimitField{"max_pending_connections", kCount,
                   "Connections without a stream (before open_stream, forkfeed-ctl) at once; the oldest one "
                   "silent for a second makes room for a new one [default: 256]"},
        config.handshake.max_pending_connections);
  visit(LimitField{"handshake_timeout_ms", kMilliseconds,
                   "A connection that has not opened a stream this long after connecting is closed, replies "
                   "or not [default: 5000]"},
        config.handshake.timeout);
}

// Sets the limit named `key` from its text ("8", "64G", "5000"). NotFound for a key that
// names no limit; InvalidArgument for a value of the wrong form, naming it.
Status set_limit(DaemonConfig& config, std::string_view key, std::string_view text);

// Every limit's key, for messages: "max_streams, max_workers, ... or handshake_timeout_ms".
std::string limit_keys();

}  // namespace forkfeed
