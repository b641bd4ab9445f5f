// Arena: memfd creation, layout of segment and slots, and attaching from another process.
#include "transport/arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace forkfeed {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kPrefixBytes = 64;  // ArenaPrefix, then the Boost.Interprocess segment

// At offset 0: what attach() needs before it can open the segment.
struct ArenaPrefix {
  std::uint64_t magic;
  std::uint64_t segment_bytes;
  std::uint64_t control_offset;  // from the start of the arena
};

// Boost's named construct() aligns to 16 bytes only; the control block and rings are
// cache-line aligned, so they are placed with allocate_aligned and placement new.
template <typename T>
T* construct_aligned(bip::managed_external_buffer& segment, std::size_t n = 1) {
  void* p = segment.allocate_aligned(sizeof(T) * n, alignof(T));
  T* first = static_cast<T*>(p);
  for (std::size_t i = 0; i < n; ++i) new (first + i) T();
  return first;
}
static_assert(sizeof(ArenaPrefix) <= kPrefixBytes);

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

std::size_t segment_bytes_for(const ArenaSpec& spec, const DatasetIndex& index) {
  const std::size_t index_bytes =
      index.path_bytes() + (index.file_count() + 1) * sizeof(std::uint64_t) +
      index.slices().size() * sizeof(DatasetIndex::Slice) + index.shard_stamps().size() * sizeof(FileStamp) +
      index.size() * sizeof(std::int64_t) + index.field_slices().size() * sizeof(FieldSlice) +
      index.field_labels().size() * sizeof(std::int64_t) + index.field_numbers().size() * sizeof(double) +
      index.name_headers().size() * sizeof(NameHeaders);
  const std::size_t fixed =
      sizeof(ControlBlock) + sizeof(SharedIndex) + spec.num_workers * sizeof(WorkerChannel) + 64 * 1024;
  // Boost's allocator keeps a little bookkeeping per block and aligns each one.
  return round_up(fixed + index_bytes + index_bytes / 64, kPage);
}

// The slots' geometry, and their fields placed in each: the first image field is the
// pixels and the first label field the labels, the others follow the pixels.
Result<SlotGeometry> slot_geometry_for(const ArenaSpec& spec, std::size_t segment_bytes, SlotFields& fields) {
  SlotGeometry g{};
  g.num_slots = spec.num_slots;
  g.batch_size = spec.batch_size;
  g.sample_bytes = spec.sample_bytes;
  const std::uint64_t labels_offset = sizeof(SlotHeader) + spec.batch_size * sizeof(std::uint64_t);
  g.pixels_offset = round_up(labels_offset + spec.batch_size * (sizeof(std::int64_t) + sizeof(SkipNote)), 64);
  std::vector<FieldDemand> demands = spec.fields;
  bool image = false, label = false;
  for (FieldDemand& d : demands) {
    if (d.kind == FieldKind::kImage && !std::exchange(image, true)) d.fixed_at = g.pixels_offset;
    if (d.kind == FieldKind::kLabel && !std::exchange(label, true)) d.fixed_at = labels_offset;
  }
  std::uint64_t end = g.pixels_offset + spec.batch_size * spec.sample_bytes;
  auto placed = SlotFields::place(demands, spec.batch_size, end, end);
  if (!placed.ok()) return placed.status();
  fields = *placed;
  for (const FieldRegion& r : fields.regions()) {
    const bool pixels = r.values == g.pixels_offset, labels = r.values == labels_offset;
    if ((pixels && r.sample_bytes != spec.sample_bytes) ||
        (labels && r.sample_bytes != sizeof(std::int64_t))) {
      return Status::Internal("field '" + std::string(r.field_name()) + "' does not match the slot's " +
                              (pixels ? "pixels" : "labels"));
    }
  }
  g.slot_stride = round_up(end, kPage);
  g.slots_offset = round_up(kPrefixBytes + segment_bytes, kPage);
  return g;
}

}  // namespace

Result<std::uint64_t> Arena::slot_stride(const ArenaSpec& spec) {
  SlotFields fields;
  const auto placed = slot_geometry_for(spec, 0, fields);
  if (!placed.ok()) return placed.status();
  return placed->slot_stride;
}

Result<std::shared_ptr<Arena>> Arena::create(const ArenaSpec& spec, const DatasetIndex& index) {
  const std::size_t segment_bytes = segment_bytes_for(spec, index);
  SlotFields fields;
  const auto placed = slot_geometry_for(spec, segment_bytes, fields);
  if (!placed.ok()) return placed.status();
  const SlotGeometry& geometry = *placed;
  const std::size_t total = geometry.slots_offset + geometry.num_slots * geometry.slot_stride;

  UniqueFd fd(::memfd_create("forkfeed-arena", MFD_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("memfd_create for the shared memory arena", errno);
  // Allocated now, not on first touch: out of memory is an error here, not a SIGBUS
  // in a worker later.
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(total)); err != 0) {
    return Status::FromErrno("allocating " + std::to_string(total >> 20) + " MiB for the shared memory arena",
                             err);
  }
  auto mapping = Mapping::map_shared(fd.get(), total);
  if (!mapping.ok()) return mapping.status();
  std::byte* base = mapping->data();

  try {
    bip::managed_external_buffer segment(bip::create_only, base + kPrefixBytes, segment_bytes);
    auto* control = construct_aligned<ControlBlock>(segment);
    control->num_workers = spec.num_workers;
    control->transform = spec.transform;
    control->on_error = spec.on_error;
    control->weight = spec.weight;
    control->slots = geometry;
    control->fields = fields;
    control->missing = spec.missing;
    for (std::size_t f = 0; f < spec.field_columns.size() && f < kMaxSlotFields; ++f) {
      control->field_columns[f] = spec.field_columns[f];
    }
    for (std::size_t f = 0; f < spec.field_transforms.size() && f < kMaxSlotFields; ++f) {
      control->field_transforms[f] = spec.field_transforms[f];
    }
    control->channels = construct_aligned<WorkerChannel>(segment, spec.num_workers);
    auto* shared = segment.construct<SharedIndex>("index")(segment.get_segment_manager());
    shared->paths.reserve(index.path_bytes());
    shared->offsets.reserve(index.file_count() + 1);
    shared->slices.reserve(index.slices().size());
    shared->stamps.reserve(index.shard_stamps().size());
    shared->labels.reserve(index.size());
    shared->offsets.push_back(0);
    for (std::size_t f = 0; f < index.file_count(); ++f) {
      const std::string_view p = index.file(f);
      shared->paths.insert(shared->paths.end(), p.begin(), p.end());
      shared->offsets.push_back(shared->paths.size());
    }
    shared->slices.insert(shared->slices.end(), index.slices().begin(), index.slices().end());
    shared->stamps.insert(shared->stamps.end(), index.shard_stamps().begin(), index.shard_stamps().end());
    for (std::size_t i = 0; i < index.size(); ++i) shared->labels.push_back(index.label(i));
    const FieldColumns& columns = index.field_columns();
    shared->extra_members = columns.extra_members();
    shared->extra_labels = columns.extra_labels();
    shared->numbers = columns.numbers;
    shared->field_slices.assign(index.field_slices().begin(), index.field_slices().end());
    shared->field_labels.assign(index.field_labels().begin(), index.field_labels().end());
    shared->field_numbers.assign(index.field_numbers().begin(), index.field_numbers().end());
    shared->name_headers.assign(index.name_headers().begin(), index.name_headers().end());
    control->index = shared;
    const auto control_offset = static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(control) - base);
    *reinterpret_cast<ArenaPrefix*>(base) = ArenaPrefix{kArenaMagic, segment_bytes, control_offset};
    return std::shared_ptr<Arena>(new Arena(std::move(fd), std::move(*mapping), control));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("laying out the shared memory arena: ") + e.what());
  }
}

Result<std::shared_ptr<Arena>> Arena::attach(UniqueFd fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("fstat of the arena fd", errno);
  const auto total = static_cast<std::size_t>(st.st_size);
  if (total < kPage)
    return Status::InvalidArgument("fd " + std::to_string(fd.get()) + " is not a forkfeed arena (too small)");
  auto mapping = Mapping::map_shared(fd.get(), total);
  if (!mapping.ok()) return mapping.status();
  const auto prefix = *reinterpret_cast<const ArenaPrefix*>(mapping->data());
  if (prefix.magic != kArenaMagic || prefix.segment_bytes + kPrefixBytes > total ||
      prefix.control_offset + sizeof(ControlBlock) > kPrefixBytes + prefix.segment_bytes) {
    return Status::InvalidArgument("fd " + std::to_string(fd.get()) + " is not a forkfeed arena (bad magic)");
  }
  auto* control = reinterpret_cast<ControlBlock*>(mapping->data() + prefix.control_offset);
  if (control->magic != kArenaMagic || control->version != kArenaVersion) {
    return Status::InvalidArgument("the arena was made by an incompatible forkfeed version");
  }
  const SlotGeometry& g = control->slots;
  if (!control->fields.fit(g.slot_stride, g.batch_size) ||
      g.slots_offset + g.num_slots * g.slot_stride > total) {
    return Status::InvalidArgument("fd " + std::to_string(fd.get()) +
                                   " is not a forkfeed arena (its slots do not fit)");
  }
  return std::shared_ptr<Arena>(new Arena(std::move(fd), std::move(*mapping), control));
}

SlotView Arena::slot(std::uint32_t i) const { return slot(i, mapping_.data()); }

SlotView Arena::slot(std::uint32_t i, const std::byte* origin) const {
  const SlotGeometry& g = control_->slots;
  // The slot is writable memory in every mapping a SlotView is made of.
  std::byte* base = const_cast<std::byte*>(origin) + g.slots_offset + std::uint64_t{i} * g.slot_stride;
  auto* header = reinterpret_cast<SlotHeader*>(base);
  auto* indices = reinterpret_cast<std::uint64_t*>(base + sizeof(SlotHeader));
  auto* labels = reinterpret_cast<std::int64_t*>(indices + g.batch_size);
  auto* skips = reinterpret_cast<SkipNote*>(labels + g.batch_size);
  return SlotView{header, indices, labels, skips, base + g.pixels_offset, base};
}

std::size_t Arena::index_bytes() const {
  const SharedIndex& i = *control_->index;
  return i.paths.capacity() + i.offsets.capacity() * sizeof(std::uint64_t) +
         i.slices.capacity() * sizeof(DatasetIndex::Slice) + i.stamps.capacity() * sizeof(FileStamp) +
         i.labels.capacity() * sizeof(std::int64_t) + i.field_slices.capacity() * sizeof(FieldSlice) +
         i.field_labels.capacity() * sizeof(std::int64_t) + i.field_numbers.capacity() * sizeof(double) +
         i.name_headers.capacity() * sizeof(NameHeaders);
}

void Arena::reset_channel(std::uint32_t worker) const {
  WorkerChannel& channel = control_->channels[worker];
  // The counts, not the rings.
  const std::uint64_t spent = channel.worker_ns.load(std::memory_order_relaxed);
  const std::uint64_t dropped = channel.dropped_boxes.load(std::memory_order_relaxed);
  new (&channel) WorkerChannel();
  channel.worker_ns.store(spent, std::memory_order_relaxed);
  channel.dropped_boxes.store(dropped, std::memory_order_relaxed);
}

std::span<std::byte> Arena::slot_region() const {
  const std::size_t offset = std::min<std::size_t>(control_->slots.slots_offset, mapping_.size());
  return {mapping_.data() + offset, mapping_.size() - offset};
}

}  // namespace forkfeed
