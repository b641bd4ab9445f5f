// SlotContents: filling a slot, compacting it as samples are decoded, reading it back.
#include "transport/slot_contents.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace forkfeed {

std::uint32_t SlotContents::prepare(std::span<const std::uint64_t> samples, const DatasetIndex& index,
                                    const std::unordered_map<std::uint64_t, std::string>& known_bad) const {
  SlotHeader& h = *view_.header;
  h.requested = static_cast<std::uint32_t>(samples.size());
  h.written = 0;
  h.skipped = 0;
  for (const FieldRegion& r : fields_->regions()) {
    if (r.ragged != 0) offsets(r)[0] = 0;
  }
  std::uint32_t decode = 0;
  for (const std::uint64_t sample : samples) {
    const std::optional<std::size_t> lacks = skip_missing_ ? index.missing_field(sample) : std::nullopt;
    if (const auto bad = known_bad.find(sample); bad != known_bad.end()) {
      note(sample, Status::Code::kBadData, bad->second);
    } else if (lacks) {
      note(sample, Status::Code::kBadData,
           "lacks field '" + index.fields()[*lacks].name + "' (missing=skip)");
    } else {
      view_.sample_indices[decode] = sample;
      view_.labels[decode] = index.label(sample);
      ++decode;
    }
  }
  return decode;
}

std::uint64_t* SlotContents::offsets(const FieldRegion& r) const {
  return reinterpret_cast<std::uint64_t*>(view_.base + r.offsets);
}

std::byte* SlotContents::next_dense(const FieldRegion& r) const {
  return view_.base + r.values + std::uint64_t{written()} * r.sample_bytes;
}

std::span<std::byte> SlotContents::next_ragged(const FieldRegion& r) const {
  const std::uint64_t used = offsets(r)[written()];
  return {view_.base + r.values + used, r.capacity - used};
}

void SlotContents::set_ragged(const FieldRegion& r, std::uint64_t bytes, std::span<const std::int64_t> shape,
                              ElementType element) const {
  const std::uint32_t w = written();
  offsets(r)[w + 1] = offsets(r)[w] + bytes;
  if (r.shapes == 0) return;
  auto* words = reinterpret_cast<std::int64_t*>(view_.base + r.shapes) + w * kShapeWords;
  const std::size_t rank = std::min(shape.size(), kMaxFieldRank);
  words[0] = static_cast<std::int64_t>(rank);
  words[1] = static_cast<std::int64_t>(element);
  std::copy_n(shape.begin(), rank, words + 2);
}

void SlotContents::set_present(const FieldRegion& r, bool present) const {
  reinterpret_cast<std::uint8_t*>(view_.base + r.present)[written()] = present ? 1 : 0;
}

void SlotContents::keep(std::uint32_t i) const {
  SlotHeader& h = *view_.header;
  // Compaction only ever moves a sample to an earlier position (written <= i).
  view_.sample_indices[h.written] = view_.sample_indices[i];
  view_.labels[h.written] = view_.labels[i];
  ++h.written;
}

void SlotContents::skip(std::uint32_t i, const Status& why) const {
  note(view_.sample_indices[i], why.code(), why.message());
}

void SlotContents::note(std::uint64_t sample, Status::Code code, std::string_view reason) const {
  SlotHeader& h = *view_.header;
  if (h.skipped >= capacity_) return;  // cannot happen: each sample is kept or skipped once
  SkipNote& n = view_.skips[h.skipped];
  n.index = sample;
  n.code = static_cast<std::uint32_t>(code);
  const std::size_t length = std::min(reason.size(), kReasonBytes - 1);
  std::memcpy(n.reason, reason.data(), length);
  n.reason[length] = '\0';
  ++h.skipped;
}

std::string_view SlotContents::skip_reason(std::uint32_t k) const {
  const char* reason = view_.skips[k].reason;
  return {reason, ::strnlen(reason, kReasonBytes)};
}

Status::Code SlotContents::skip_code(std::uint32_t k) const {
  // A worker wrote it: a number that is no code reads as kInternal, never as bad data.
  return Status::FromCode(static_cast<Status::Code>(view_.skips[k].code), "").code();
}

bool SlotContents::complete() const {
  const SlotHeader& h = *view_.header;
  return h.requested <= capacity_ && h.written <= h.requested && h.skipped <= h.requested - h.written &&
         h.written + h.skipped == h.requested;
}

}  // namespace forkfeed
