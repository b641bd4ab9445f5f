// DeliveryRecord to and from the wire.
#include "remote/remote_wire.h"

#include <algorithm>
#include <cstdio>

namespace forkfeed {

BatchSpan batch_span(const DeliveryRecord& d) {
  const std::uint64_t ids = std::uint64_t{8} * d.count;
  std::uint64_t begin = std::min<std::uint64_t>({d.pixels_offset, d.labels_offset, d.indices_offset});
  std::uint64_t end = std::max<std::uint64_t>(
      {d.pixels_offset + d.pixel_bytes, d.labels_offset + ids, d.indices_offset + ids});
  if (d.fields_bytes != 0) {
    begin = std::min(begin, d.slot_offset);
    end = std::max(end, d.slot_offset + d.fields_bytes);
  }
  return {begin, end - begin};
}

RemoteDelivery to_wire(const DeliveryRecord& d, std::uint64_t sequence, const BatchSpan& span) {
  RemoteDelivery w;
  w.kind = static_cast<std::uint16_t>(d.kind);
  w.sequence = sequence;
  w.generation = d.generation;
  w.epoch = d.epoch;
  w.index = d.index;
  if (d.kind == DeliveryKind::kBatch) {
    w.pixels_offset = d.pixels_offset - span.offset;
    w.labels_offset = d.labels_offset - span.offset;
    w.indices_offset = d.indices_offset - span.offset;
    if (d.fields_bytes != 0) w.slot_offset = d.slot_offset - span.offset;
  }
  w.fields_bytes = d.fields_bytes;
  w.pixel_bytes = d.pixel_bytes;
  w.count = d.count;
  w.code = d.code;
  w.fatal = d.fatal;
  w.skipped = d.skipped;
  return w;
}

DeliveryRecord from_wire(const RemoteDelivery& w, std::string_view message) {
  DeliveryRecord d{};
  d.kind = static_cast<DeliveryKind>(w.kind);
  d.generation = w.generation;
  d.epoch = w.epoch;
  d.index = w.index;
  d.pixels_offset = w.pixels_offset;
  d.pixel_bytes = w.pixel_bytes;
  d.labels_offset = w.labels_offset;
  d.indices_offset = w.indices_offset;
  d.slot_offset = w.slot_offset;
  d.fields_bytes = w.fields_bytes;
  d.count = w.count;
  d.code = w.code;
  d.fatal = w.fatal;
  d.skipped = w.skipped;
  const std::size_t n = std::min(message.size(), kDeliveryMessageBytes - 1);
  if (n > 0) std::memcpy(d.message, message.data(), n);
  d.message[n] = '\0';
  return d;
}

std::optional<RemoteDelivery> read_delivery(const void* header, std::size_t length) {
  if (header == nullptr || length != sizeof(RemoteDelivery)) return std::nullopt;
  RemoteDelivery d;
  std::memcpy(&d, header, sizeof d);
  if (d.magic != kRemoteMagic || d.version != kRemoteVersion) return std::nullopt;
  return d;
}

}  // namespace forkfeed
