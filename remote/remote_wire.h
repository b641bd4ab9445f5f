// What forkfeed-gateway sends a remote client over UCX: deliveries, each one active
// message with a fixed header and its data — a batch's bytes by rendezvous, from the
// daemon's slot straight into a receive slot, or an error's message. Everything else
// (the hello with the token, requests and replies, credits, heartbeats) travels on the
// TCP control connection as forkfeedd's frames: UCX never parses anything a stranger
// sends to the gateway's port.
//
// A batch's bytes are one span of its slot: the sample indices, labels and pixels with
// whatever lies between them, and with a schema's fields the slot from its start to the
// end of what its samples wrote (fields_written_end: every region but the last
// whole, for ragged ones the capacity their worst batch needs); the header's offsets are
// from the span's start.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "protocol/consumer_channel.h"

namespace forkfeed {

inline constexpr unsigned kDeliveryMessage = 1;  // the active message ids
// Header-only, once, right after the gateway connected to the client's worker: the client
// takes the stream as open only once it came, so that UCX's connection handshake between
// the two is over before either side may close (UCX 1.13 asserts when a worker is
// destroyed with its part of that handshake still pending), and a client that UCX cannot
// reach hears so at once.
inline constexpr unsigned kWelcomeMessage = 2;
inline constexpr std::uint32_t kRemoteMagic = 0x6666726b;  // "krff"
inline constexpr std::uint16_t kRemoteVersion = 2;         // 2: a batch's fields (slot_offset, fields_bytes)
// The gateway beats this often on the control connection; a client that hears nothing
// for kRemoteSilence while it waits takes the gateway (its daemon, its host, the
// network) for lost.
inline constexpr std::chrono::milliseconds kHeartbeatInterval{1000};
inline constexpr std::chrono::milliseconds kRemoteSilence{3000};
// A gateway sent wrong tokens from an address checks that address's next hellos up to
// this late (gateway/token_throttle.h); a client's connect_timeout should allow for it.
inline constexpr std::chrono::seconds kWrongTokenMostWait{5};

// A DeliveryRecord on the wire (its message travels as the data).
struct RemoteDelivery {
  std::uint32_t magic = kRemoteMagic;
  std::uint16_t version = kRemoteVersion;
  std::uint16_t kind = 0;      // a DeliveryKind
  std::uint64_t sequence = 0;  // from 0, one more per delivery of the stream
  std::uint64_t generation = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;
  std::uint64_t pixels_offset = 0;  // kBatch: from the start of the span
  std::uint64_t pixel_bytes = 0;
  std::uint64_t labels_offset = 0;
  std::uint64_t indices_offset = 0;
  std::uint32_t count = 0;
  std::uint32_t code = 0;
  std::uint32_t fatal = 0;
  std::uint32_t skipped = 0;      // DeliveryRecord::skipped (0 from a gateway before it)
  std::uint64_t slot_offset = 0;  // kBatch with fields: from the start of the span
  std::uint64_t fields_bytes = 0;
};
static_assert(sizeof(RemoteDelivery) == 104);  // within verbs' 128-byte AM header

// The span of the arena a kBatch delivery covers.
struct BatchSpan {
  std::uint64_t offset;
  std::uint64_t bytes;
};
BatchSpan batch_span(const DeliveryRecord& d);

// `d` for the wire: its offsets made relative to `span` (kBatch).
RemoteDelivery to_wire(const DeliveryRecord& d, std::uint64_t sequence, const BatchSpan& span);
// And back, its message from `message` (cut at kDeliveryMessageBytes - 1).
DeliveryRecord from_wire(const RemoteDelivery& d, std::string_view message);
// The header of an active message as a RemoteDelivery, if it is one (size, magic and
// version match). Copied: UCX gives no alignment.
std::optional<RemoteDelivery> read_delivery(const void* header, std::size_t length);

}  // namespace forkfeed
