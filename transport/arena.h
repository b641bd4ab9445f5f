// Arena: the shared memory a loader and its workers share, on a memfd (no /dev/shm
// name to leak, no size limit there). Its size is fixed at creation: the control block
// and index, plus num_slots * slot_stride; nothing grows while it runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/unique_fd.h"
#include "forkfeed/dataset.h"
#include "forkfeed/status.h"
#include "transport/arena_layout.h"
#include "transport/mapping.h"
#include "transport/slot_fields.h"

namespace forkfeed {

struct ArenaSpec {
  std::uint32_t num_workers;
  std::uint32_t num_slots;
  std::uint32_t batch_size;
  std::uint64_t sample_bytes;
  TransformSpec transform;
  OnError on_error;
  std::uint32_t weight = 1;  // ControlBlock::weight
  // A sample schema's fields (transport/slot_fields.h), in its order; empty without one.
  // The first image field is the pixels (sample_bytes each) and the first label field the
  // labels; every other field gets a region of its slots.
  std::vector<FieldDemand> fields = {};
  // By field of `fields`, when a loader's workers write them: where the index keeps it
  // and an image field's transform; empty otherwise (tests of the slots alone).
  std::vector<FieldColumn> field_columns = {};
  std::vector<TransformSpec> field_transforms = {};
  // What a sample the index marks as lacking a field does (the index holds such samples
  // under skip and empty only).
  MissingField missing = MissingField::kError;
};

// One slot, resolved to pointers in this process's mapping.
struct SlotView {
  SlotHeader* header;
  std::uint64_t* sample_indices;  // batch_size entries
  std::int64_t* labels;           // batch_size entries
  SkipNote* skips;                // batch_size entries
  std::byte* pixels;              // batch_size * sample_bytes
  std::byte* base;                // the slot's first byte: fields' offsets count from here
};

class Arena {
 public:
  // Creates and fills a new arena; the index is copied into it.
  static Result<std::shared_ptr<Arena>> create(const ArenaSpec& spec, const DatasetIndex& index);
  // The bytes of one slot of an arena of `spec`, its fields placed as create() places them.
  static Result<std::uint64_t> slot_stride(const ArenaSpec& spec);
  // Maps an arena made by create() in another process. Takes ownership of |fd|.
  static Result<std::shared_ptr<Arena>> attach(UniqueFd fd);

  ControlBlock& control() const { return *control_; }
  WorkerChannel& channel(std::uint32_t worker) const { return control_->channels[worker]; }
  // Rebuilds worker `worker`'s channel empty, served by no worker, for its replacement
  // (the worker time spent through it stays).
  // REQUIRES: the worker is dead (reaped), so no other process touches the channel.
  void reset_channel(std::uint32_t worker) const;
  const SharedIndex& index() const { return *control_->index; }
  SlotView slot(std::uint32_t i) const;
  // The same slot in another mapping of the arena's memfd, whose byte 0 is at `origin`
  // (a SlotWindow's, where batches are read).
  SlotView slot(std::uint32_t i, const std::byte* origin) const;
  // Every batch slot: from the first to the end of the mapping, page aligned at both ends.
  std::span<std::byte> slot_region() const;

  // Bytes the dataset index takes in the arena (its vectors' storage).
  std::size_t index_bytes() const;
  int fd() const { return fd_.get(); }
  // The first byte of the mapping: offsets in the arena (a consumer's view of it) count from here.
  const std::byte* data() const { return mapping_.data(); }
  std::size_t size() const { return mapping_.size(); }

 private:
  Arena(UniqueFd fd, Mapping mapping, ControlBlock* control)
      : fd_(std::move(fd)), mapping_(std::move(mapping)), control_(control) {}
  UniqueFd fd_;
  Mapping mapping_;
  ControlBlock* control_;
};

}  // namespace forkfeed
