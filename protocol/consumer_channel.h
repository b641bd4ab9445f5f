// ConsumerChannel: the shared memory between forkfeedd and the client of one stream.
// Deliveries (daemon -> client) say which batch lies where in the arena; returns
// (client -> daemon) give back the slots the client is done with. Each direction has an
// eventfd, so either side can poll() it together with the socket. The daemon treats all
// of it as untrusted: a client may write anything here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "base/unique_fd.h"
#include "forkfeed/batch.h"
#include "forkfeed/status.h"
#include "transport/mapping.h"
#include "transport/slot_fields.h"
#include "transport/spsc_ring.h"

namespace forkfeed {

inline constexpr std::uint64_t kChannelMagic = 0x6c6e6e6168636b66ULL;  // "fkchannl"
inline constexpr std::uint32_t kChannelVersion = 3;  // 2: DeliveryRecord::skipped; 3: its fields
// Bounds the batch slots of one stream: every slot may sit in the deliveries ring.
inline constexpr std::uint32_t kChannelCapacity = 256;
inline constexpr std::size_t kDeliveryMessageBytes = 1024;

enum class DeliveryKind : std::uint32_t {
  kBatch = 1,      // a batch in the arena; return `handle` and `tag` when done
  kEndOfPass = 2,  // the pass of `epoch` is over (Loader::next() gave nullopt)
  kError = 3,      // Loader::next() failed; `epoch` and `index` say where the pass stands after it
                   // (a stream on demand: `index` is the batch it failed on)
  kEmpty = 4,      // a stream on demand: batch `index` was wanted and every sample of it was skipped
};

struct DeliveryRecord {
  std::uint64_t generation;  // the stream's (StreamOpened::generation); records of older ones are dropped
  std::uint64_t epoch;
  std::uint64_t index;          // kBatch: Batch::index(); kError: batches delivered in the pass after it
  std::uint64_t tag;            // kBatch: echoed in the return, so a stale return cannot free a reused handle
  std::uint64_t pixels_offset;  // from the start of the arena
  std::uint64_t pixel_bytes;
  std::uint64_t labels_offset;
  std::uint64_t indices_offset;
  // Where the batch's slot begins (from which a schema's fields' regions count, and in
  // which a client copies the batch aside when it holds every slot), and with fields
  // (StreamOpened::fields) how far from there what its samples wrote reaches
  // (fields_written_end). fields_bytes is 0 without fields; slot_offset is 0 from a
  // forkfeedd older than copying aside, without fields.
  std::uint64_t slot_offset;
  std::uint64_t fields_bytes;
  std::uint32_t handle;
  std::uint32_t count;  // samples
  DeliveryKind kind;
  std::uint32_t code;   // kError: a Status::Code
  std::uint32_t fatal;  // kError: the stream stays broken (Loader's error "stays")
  // Samples the Loader's next() skipped on its way to this record: this batch's own and
  // those of wholly skipped batches it passed over. Counted by the client when its caller
  // takes the record, so that skipped_samples follow consumption, not prefetch.
  std::uint32_t skipped;
  char message[kDeliveryMessageBytes];  // kError: NUL-terminated
};

// Where a stream's batch slots lie in its arena, and the fields placed in each.
struct ArenaSlots {
  std::uint64_t offset = 0;            // of the first slot, from the arena's start
  std::uint64_t stride = 0;            // one slot's bytes
  const SlotFields* fields = nullptr;  // none without a schema
};

// Where a Batch lies in the arena mapped at `base`, as a kBatch delivery says it (the
// caller adds generation, handle and tag). The one place that writes these offsets...
DeliveryRecord batch_delivery(const Batch& batch, const std::byte* base, const ArenaSlots& slots);
// ... and the one that checks them, as a client must: a batch of 1 to `batch_size`
// samples of `sample_bytes` each, its pixels, labels and indices (and its fields' bytes,
// when it says it has some) inside `arena_bytes` (an arena, or what a remote client
// received), labels and indices 8-byte aligned.
bool batch_delivery_fits(const DeliveryRecord& d, std::uint64_t arena_bytes, std::uint64_t sample_bytes,
                         std::uint32_t batch_size);
// How far from the slot's start what the first `count` samples wrote in `fields`'
// regions reaches (present flags, dense values, ragged offsets, shapes and values): what
// a sender of the slot sends, every region before the last whole. Nullopt when it reaches
// past `within` bytes or what the ragged fields say of themselves does not fit
// (SlotFields::written_fit), as a reader of `within` bytes of a slot must check; their
// offsets are read only once they are inside. REQUIRES: fields.fit() for the slot.
std::optional<std::uint64_t> fields_written_end(const SlotFields& fields, const std::byte* slot,
                                                std::uint32_t count, std::uint64_t within);
// The slot of a delivery that fits, holding `fields` as a client checked them against
// the stream's slots (SlotFields::fit): nullptr when what its samples wrote does not lie
// within the bytes the delivery says they take (fields_written_end), or when it
// says it has none.
const std::byte* batch_fields_slot(const DeliveryRecord& d, const std::byte* base, const SlotFields& fields);
// What a delivery that fits covers, from its first byte to its last: its pixels, labels,
// indices and fields (the memory a child of fork() copies while a Batch of it is held).
std::span<const std::byte> batch_memory(const DeliveryRecord& d, const std::byte* base);

struct SlotReturn {
  std::uint32_t handle;
  std::uint32_t reserved;
  std::uint64_t tag;
};

struct ChannelBlock {
  std::uint64_t magic = kChannelMagic;
  std::uint32_t version = kChannelVersion;
  SpscRing<DeliveryRecord, kChannelCapacity> deliveries;
  SpscRing<SlotReturn, kChannelCapacity> returns;
};

class ConsumerChannel {
 public:
  // Daemon side: a new memfd holding a ChannelBlock, sealed against resizing (a client
  // cannot truncate it under the daemon: no SIGBUS), and two eventfds.
  static Result<ConsumerChannel> create();
  // Client side: maps the fds the daemon sent. Takes ownership of all three.
  static Result<ConsumerChannel> attach(UniqueFd memfd, UniqueFd delivered, UniqueFd returned);

  ChannelBlock& block() const { return *block_; }
  int memfd() const { return memfd_.get(); }
  int delivered_fd() const { return delivered_.get(); }  // readable: deliveries were pushed
  int returned_fd() const { return returned_.get(); }    // readable: returns were pushed

  void ring_delivered() const { ring(delivered_.get()); }
  void ring_returned() const { ring(returned_.get()); }
  // Clears a readable eventfd (before looking at its ring again).
  static void clear(int eventfd);

 private:
  ConsumerChannel(UniqueFd memfd, Mapping mapping, UniqueFd delivered, UniqueFd returned)
      : memfd_(std::move(memfd)),
        mapping_(std::move(mapping)),
        delivered_(std::move(delivered)),
        returned_(std::move(returned)),
        block_(reinterpret_cast<ChannelBlock*>(mapping_.data())) {}
  static void ring(int eventfd);

  UniqueFd memfd_;
  Mapping mapping_;
  UniqueFd delivered_;
  UniqueFd returned_;
  ChannelBlock* block_;
};

}  // namespace forkfeed
