// PoolMessage: what a worker pool tells one of its workers on the worker's own socket
// (a SOCK_SEQPACKET pair, one message per datagram): a loader attached — here are its
// arena and completion eventfd — or detached. The worker reads its socket between tasks,
// when WorkerState::messages moved.
#pragma once

#include <cstdint>
#include <optional>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct PoolMessage {
  enum class Kind : std::uint32_t { kAttach = 1, kDetach = 2 };
  Kind kind;
  std::uint64_t loader;  // the pool's id of the loader, never reused
};

// An attach carries the loader's arena memfd and completion eventfd; a detach none.
struct ReceivedPoolMessage {
  PoolMessage message;
  UniqueFd arena;
  UniqueFd completions;
};

// A connected SOCK_SEQPACKET pair, both ends close-on-exec.
Result<std::pair<UniqueFd, UniqueFd>> pool_socket_pair();
// Sends `message` (with `arena` and `completions` for an attach). On a non-blocking
// socket whose buffer is full (a worker that does not read: stopped, or stuck in a
// sample) it fails with kResourceExhausted instead of waiting.
Status send_pool_message(int socket, PoolMessage message, int arena = -1, int completions = -1);
// The next message, or nullopt when none is waiting. An error when the pool's end is
// closed (the pool is gone) or a message is malformed.
Result<std::optional<ReceivedPoolMessage>> receive_pool_message(int socket);

}  // namespace forkfeed
