// What lives in a loader's shared memory arena, shared by the loader and the workers of
// its pool: a control block, one task ring and one completion ring per pool worker, the
// dataset index, and the batch slots. (What the workers of a pool share among loaders is
// in transport/pool_memory.h.) Everything here is position independent (offsets, offset_ptr),
// so a process may map the arena at any address.
#pragma once

#include <atomic>
#include <boost/interprocess/allocators/allocator.hpp>
#include <boost/interprocess/containers/vector.hpp>
#include <boost/interprocess/managed_external_buffer.hpp>
#include <cstdint>
#include <span>
#include <string_view>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "transport/slot_fields.h"
#include "transport/spsc_ring.h"

namespace forkfeed {

namespace bip = boost::interprocess;
using SegmentManager = bip::managed_external_buffer::segment_manager;
template <typename T>
using ShmVector = bip::vector<T, bip::allocator<T, SegmentManager>>;

inline constexpr std::uint64_t kArenaMagic = 0x6b6f66646565666bULL;  // "kfeedfok"
inline constexpr std::uint32_t kArenaVersion = 9;
// Per-worker ring capacity; bounds workers * prefetch tasks in flight per worker.
inline constexpr std::uint32_t kRingCapacity = 64;
// A skipped sample's reason, NUL-terminated; the path is not in it (the orchestrator
// knows it from the index), so only long decoder messages are cut.
inline constexpr std::size_t kReasonBytes = 244;
inline constexpr std::uint64_t kNoSample = ~std::uint64_t{0};

// One batch of work: decode samples [0, count) of `slot` (their dataset indices are in
// the slot header) for pass `generation`.
struct Task {
  std::uint64_t generation;
  std::uint64_t epoch;
  std::uint64_t batch_id;
  std::uint32_t slot;
  std::uint32_t count;
};

enum class TaskOutcome : std::uint32_t {
  kDone,       // every sample written or skipped (OnError::kSkip)
  kFailed,     // a sample could not be decoded; the slot's last skip note says which and why
  kCancelled,  // abandoned because the generation moved on
};

struct Completion {
  std::uint64_t generation;
  std::uint64_t batch_id;
  std::uint32_t slot;
  TaskOutcome outcome;
  std::uint64_t started_ns = 0;   // CLOCK_MONOTONIC, when the worker took the task
  std::uint64_t finished_ns = 0;  // and when it was done with it
  // The worker time it took: less than finished - started when the worker set the task
  // aside between samples for other loaders' turns.
  std::uint64_t worker_ns = 0;
};

// The loader's two rings with one worker of its pool. After that worker dies the loader
// rebuilds the channel in place and hands it to the replacement by setting `incarnation`.
struct WorkerChannel {
  SpscRing<Task, kRingCapacity> tasks;              // loader -> worker
  SpscRing<Completion, kRingCapacity> completions;  // worker -> loader
  // Which life of the pool's worker serves this channel (the pool counts them from 1); 0:
  // none. Set only by the loader, so that a replacement never reads a channel that still
  // holds its dead predecessor's tasks.
  alignas(64) std::atomic<std::uint64_t> incarnation{0};
  // Worker time spent on this loader's tasks through this channel, added by its worker
  // sample by sample (so a share of the pool reads true over any few seconds, even while
  // a long batch is part-way); kept across the worker's lives by Arena::reset_channel.
  alignas(64) std::atomic<std::uint64_t> worker_ns{0};
  // Boxes its worker read and sanitising dropped (SampleFields::dropped_boxes), added
  // sample by sample, each time a sample is read; kept across lives as worker_ns is.
  std::atomic<std::uint64_t> dropped_boxes{0};
};

// The longest transform text a loader takes (with its terminating NUL).
inline constexpr std::size_t kTransformTextBytes = 2048;

// What a worker needs to turn a file into output pixels. The options it was made from
// were resolved (plan/image_plan.h): size and dtype are what the pipeline makes.
struct TransformSpec {
  char pipeline[kTransformTextBytes];  // LoaderOptions::transform, NUL-terminated
  DType dtype;
  Layout layout;           // resolved: nhwc or nchw
  std::uint32_t size;      // 0: each sample its own (at most max_size a side)
  std::uint32_t max_size;  // LoaderOptions::max_size
  float mean[3];
  float std[3];
  std::uint64_t seed;
  std::uint64_t max_pixels;
  std::uint64_t max_file_bytes;
};

// Bytes of one sample's pixels: size x size x 3 channels of dtype.
inline std::size_t sample_bytes(DType dtype, std::uint32_t size) {
  return std::size_t{size} * size * 3 * (dtype == DType::kUint8 ? 1 : sizeof(float));
}

// Placement of the batch slots in the arena.
struct SlotGeometry {
  std::uint32_t num_slots;
  std::uint32_t batch_size;
  std::uint64_t sample_bytes;   // pixels of one sample
  std::uint64_t pixels_offset;  // from the start of a slot
  std::uint64_t slot_stride;    // page aligned
  std::uint64_t slots_offset;   // from the start of the arena, page aligned
};

// The head of each slot. Sample indices, labels, skip notes and pixels follow (see
// Arena::slot); SlotContents (transport/slot_contents.h) alone reads and writes them.
struct alignas(64) SlotHeader {  // aligned: the uint64 indices follow it directly
  std::uint32_t requested;       // samples in the batch (orchestrator)
  std::uint32_t written;         // samples decoded into the pixels (worker)
  std::uint32_t skipped;         // skip notes (orchestrator: known bad; worker: failed to decode)
};

// A sample left out of its batch (bad data, on_error=skip), or the one that failed it,
// and why: `code` is a Status::Code, kBadData for the sample's own fault.
struct SkipNote {
  std::uint64_t index;
  std::uint32_t code;
  char reason[kReasonBytes];
};
static_assert(sizeof(SkipNote) == 256);

// A shared vector's elements as a span (empty ones have no element to point at).
template <typename T>
std::span<const T> view(const ShmVector<T>& v) {
  return v.empty() ? std::span<const T>() : std::span<const T>(&v[0], v.size());
}

// The dataset index, copied into the arena so that any worker can read it.
// DatasetIndex, as the workers read it: the same files, slices, shard stamps and labels.
struct SharedIndex {
  explicit SharedIndex(SegmentManager* sm)
      : paths(sm),
        offsets(sm),
        slices(sm),
        stamps(sm),
        labels(sm),
        field_slices(sm),
        field_labels(sm),
        field_numbers(sm),
        name_headers(sm) {}
  std::size_t size() const { return labels.size(); }
  // Read as the DatasetIndex it copies is read.
  PackedSamples packed() const {
    const std::span<const char> p = view(paths);
    return {{p.data(), p.size()}, view(offsets), view(slices),      view(stamps),
            view(field_slices),   extra_members, view(name_headers)};
  }
  std::string_view path(std::size_t i) const { return packed().path(i); }
  SampleSource source(std::size_t i) const { return packed().source(i); }
  // Sample i's label column k beyond labels[i], and its number column k.
  std::int64_t field_label(std::size_t i, std::size_t k) const { return field_labels[i * extra_labels + k]; }
  double field_number(std::size_t i, std::size_t k) const { return field_numbers[i * numbers + k]; }
  ShmVector<char> paths;
  ShmVector<std::uint64_t> offsets;       // file f is paths[offsets[f], offsets[f+1])
  ShmVector<DatasetIndex::Slice> slices;  // sharded: sample i; else empty, sample i is file i
  ShmVector<FileStamp> stamps;            // sharded: shard f when it was indexed
  ShmVector<std::int64_t> labels;
  // With fields (DatasetIndex::field_columns): per sample, extra_members FieldSlices,
  // extra_labels labels and `numbers` numbers.
  ShmVector<FieldSlice> field_slices;
  ShmVector<std::int64_t> field_labels;
  ShmVector<double> field_numbers;
  ShmVector<NameHeaders> name_headers;  // DatasetIndex::name_headers
  std::uint32_t extra_members = 0;
  std::uint32_t extra_labels = 0;
  std::uint32_t numbers = 0;
};

struct ControlBlock {
  std::uint64_t magic = kArenaMagic;
  std::uint32_t version = kArenaVersion;
  std::uint32_t num_workers = 0;  // of the pool: one channel each
  // Bumped by every reset; tasks of an older generation are stale.
  alignas(64) std::atomic<std::uint64_t> generation{0};
  // The loader's share of a worker's time against the pool's other loaders.
  std::uint32_t weight = 1;
  OnError on_error = OnError::kFail;
  TransformSpec transform{};
  SlotGeometry slots{};
  SlotFields fields{};  // where a schema's fields lie in each slot; none without one
  // By field of `fields`: where the index keeps it, and an image field's transform (the
  // first image field's is `transform` too).
  FieldColumn field_columns[kMaxSlotFields]{};
  TransformSpec field_transforms[kMaxSlotFields]{};
  MissingField missing = MissingField::kError;  // ArenaSpec::missing
  bip::offset_ptr<WorkerChannel> channels;      // num_workers of them
  bip::offset_ptr<SharedIndex> index;
};

}  // namespace forkfeed
