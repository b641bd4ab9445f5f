// StreamLink: how a Client reaches its stream — forkfeedd's Unix socket and shared memory
// (LocalLink), or forkfeed-gateway over UCX (RemoteLink). The Client keeps the pass (its
// position, state(), the generation it drops stale deliveries by); a link only carries
// requests and deliveries and owns the memory batches are read from.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "forkfeed/status.h"
#include "loader/slot_pool.h"
#include "protocol/consumer_channel.h"
#include "protocol/frame.h"
#include "transport/slot_window.h"

namespace forkfeed {

class StreamLink;

// A delivery and where its bytes lie: the record's offsets are from `base`, inside
// `bytes` (the arena for a local stream, a receive slot for a remote one), and all within
// its slot: `slot_bytes` from byte `slot` of `window`'s memfd, read at
// window->origin(slot) + slot (where a batch held too long can be copied aside).
struct LinkDelivery {
  DeliveryRecord record{};  // a plain shared-memory record: zeroed, or a field is left to chance
  const std::byte* base = nullptr;
  std::uint64_t bytes = 0;
  std::shared_ptr<SlotWindow> window = nullptr;
  std::uint64_t slot = 0;
  std::uint64_t slot_bytes = 0;
  // The link that received it, for a link of links (FanInLink): drop() and lend() go there.
  StreamLink* carrier = nullptr;
};

class StreamLink {
 public:
  virtual ~StreamLink() = default;

  // Sends a request and waits for its reply; an {"ok":false} reply becomes its Status.
  // Fails the same way once the link is lost.
  virtual Result<nlohmann::json> request(MessageType type, const nlohmann::json& body) = 0;
  // The next delivery, if one has arrived; never waits.
  virtual std::optional<LinkDelivery> pop() = 0;
  // Waits until a delivery may have arrived (true), `interrupt_fd` is readable (false),
  // or the link is lost (its error).
  virtual Result<bool> wait(int interrupt_fd) = 0;
  // Non-blocking: the error that ended the link, or Ok while it is up.
  virtual Status check() = 0;
  // A batch delivery not handed out (its pass is gone): its slot goes back now.
  virtual void drop(const LinkDelivery& d) = 0;
  // The lease of a batch handed out: destroying it, in any thread, gives the slot back.
  virtual std::unique_ptr<detail::SlotLease> lend(const LinkDelivery& d) = 0;
  // Batches handed out and not yet given back, and the most there can be: when held()
  // reaches slots(), nothing more can arrive until the caller releases a batch.
  virtual std::uint32_t held() const = 0;
  virtual std::uint32_t slots() const = 0;
  // Whether the memory batches are read from is page-locked for CUDA (pin_memory_device).
  virtual bool pinned() const = 0;
};

}  // namespace forkfeed
