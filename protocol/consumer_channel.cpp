// ConsumerChannel: memfd, seals and eventfds.
#include "protocol/consumer_channel.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>

namespace forkfeed {
namespace {

constexpr std::size_t kChannelBytes = (sizeof(ChannelBlock) + 4095) / 4096 * 4096;

bool in_arena(std::uint64_t offset, std::uint64_t bytes, std::uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

}  // namespace

DeliveryRecord batch_delivery(const Batch& batch, const std::byte* base, const ArenaSlots& slots) {
  const auto offset = [&](const void* p) {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - base);
  };
  DeliveryRecord d{};
  d.kind = DeliveryKind::kBatch;
  d.epoch = batch.epoch();
  d.index = batch.index();
  d.count = static_cast<std::uint32_t>(batch.size());
  d.pixels_offset = offset(batch.data());
  d.pixel_bytes = batch.bytes();
  d.labels_offset = offset(batch.labels().data());
  d.indices_offset = offset(batch.sample_indices().data());
  // The batch's slot is the one its pixels lie in; the loader wrote it, so it fits.
  if (slots.stride > 0)
    d.slot_offset = slots.offset + (d.pixels_offset - slots.offset) / slots.stride * slots.stride;
  if (slots.fields != nullptr && slots.fields->count > 0) {
    d.fields_bytes =
        fields_written_end(*slots.fields, base + d.slot_offset, d.count, slots.stride).value_or(0);
  }
  return d;
}

bool batch_delivery_fits(const DeliveryRecord& d, std::uint64_t arena_bytes, std::uint64_t sample_bytes,
                         std::uint32_t batch_size) {
  return d.count > 0 && d.count <= batch_size && d.pixel_bytes == d.count * sample_bytes &&
         in_arena(d.pixels_offset, d.pixel_bytes, arena_bytes) &&
         in_arena(d.labels_offset, 8 * d.count, arena_bytes) &&
         in_arena(d.indices_offset, 8 * d.count, arena_bytes) && d.labels_offset % 8 == 0 &&
         d.indices_offset % 8 == 0 && d.slot_offset % 8 == 0 &&
         (d.fields_bytes == 0 || in_arena(d.slot_offset, d.fields_bytes, arena_bytes));
}

std::optional<std::uint64_t> fields_written_end(const SlotFields& fields, const std::byte* slot,
                                                std::uint32_t count, std::uint64_t within) {
  std::uint64_t end = 0;
  const auto reach = [&](std::uint64_t at, std::uint64_t bytes) { end = std::max(end, at + bytes); };
  for (const FieldRegion& r : fields.regions()) {  // fit(): none of these overflows
    reach(r.present, count);
    if (r.ragged == 0) {
      reach(r.values, r.sample_bytes * count);
      continue;
    }
    reach(r.offsets, (count + std::uint64_t{1}) * sizeof(std::uint64_t));
    if (r.shapes != 0) reach(r.shapes, count * kShapeWords * sizeof(std::int64_t));
  }
  if (end > within || !fields.written_fit(slot, count)) return std::nullopt;
  for (const FieldRegion& r : fields.regions()) {
    if (r.ragged != 0) reach(r.values, reinterpret_cast<const std::uint64_t*>(slot + r.offsets)[count]);
  }
  if (end > within) return std::nullopt;
  return end;
}

const std::byte* batch_fields_slot(const DeliveryRecord& d, const std::byte* base, const SlotFields& fields) {
  if (d.fields_bytes == 0) return nullptr;
  const std::byte* slot = base + d.slot_offset;
  return fields_written_end(fields, slot, d.count, d.fields_bytes) ? slot : nullptr;
}

std::span<const std::byte> batch_memory(const DeliveryRecord& d, const std::byte* base) {
  std::uint64_t first = std::min({d.pixels_offset, d.labels_offset, d.indices_offset});
  std::uint64_t end = std::max({d.pixels_offset + d.pixel_bytes, d.labels_offset + 8 * std::uint64_t{d.count},
                                d.indices_offset + 8 * std::uint64_t{d.count}});
  if (d.fields_bytes != 0) {
    first = std::min(first, d.slot_offset);
    end = std::max(end, d.slot_offset + d.fields_bytes);
  }
  return {base + first, end - first};
}

Result<ConsumerChannel> ConsumerChannel::create() {
  UniqueFd memfd(::memfd_create("forkfeed-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!memfd.valid()) return Status::FromErrno("memfd_create for a consumer channel", errno);
  if (::ftruncate(memfd.get(), static_cast<off_t>(kChannelBytes)) != 0) {
    return Status::FromErrno("sizing a consumer channel", errno);
  }
  if (::fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return Status::FromErrno("sealing a consumer channel", errno);
  }
  auto mapping = Mapping::map_shared(memfd.get(), kChannelBytes);
  if (!mapping.ok()) return mapping.status();
  new (mapping->data()) ChannelBlock();
  UniqueFd delivered(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  UniqueFd returned(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!delivered.valid() || !returned.valid())
    return Status::FromErrno("eventfd for a consumer channel", errno);
  return ConsumerChannel(std::move(memfd), std::move(mapping).value(), std::move(delivered),
                         std::move(returned));
}

Result<ConsumerChannel> ConsumerChannel::attach(UniqueFd memfd, UniqueFd delivered, UniqueFd returned) {
  struct stat st {};
  if (::fstat(memfd.get(), &st) != 0) return Status::FromErrno("fstat of the consumer channel", errno);
  if (static_cast<std::size_t>(st.st_size) < sizeof(ChannelBlock)) {
    return Status::Internal("forkfeedd sent a consumer channel of " + std::to_string(st.st_size) +
                            " bytes; is it another forkfeed version?");
  }
  auto mapping = Mapping::map_shared(memfd.get(), static_cast<std::size_t>(st.st_size));
  if (!mapping.ok()) return mapping.status();
  const auto* block = reinterpret_cast<const ChannelBlock*>(mapping->data());
  if (block->magic != kChannelMagic || block->version != kChannelVersion) {
    return Status::Internal(
        "forkfeedd's consumer channel has another layout; use forkfeed and forkfeedd of one release");
  }
  return ConsumerChannel(std::move(memfd), std::move(mapping).value(), std::move(delivered),
                         std::move(returned));
}

void ConsumerChannel::ring(int eventfd) {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is saturated: it is readable then anyway.
  (void)!::write(eventfd, &one, sizeof one);
}

void ConsumerChannel::clear(int eventfd) {
  std::uint64_t value = 0;
  (void)!::read(eventfd, &value, sizeof value);
}

}  // namespace forkfeed
