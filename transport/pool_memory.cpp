// PoolMemory: create, attach, the worker states.
#include "transport/pool_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <new>
#include <string>

namespace forkfeed {
namespace {

constexpr std::uint64_t kPoolMagic = 0x6c6f6f7064656566ULL;  // "feedpool"
constexpr std::uint32_t kPoolVersion = 1;
constexpr std::size_t kStatesOffset = (sizeof(PoolBlock) + 63) / 64 * 64;

std::size_t bytes_for(std::uint32_t workers) {
  return kStatesOffset + std::size_t{workers} * sizeof(WorkerState);
}

}  // namespace

Result<PoolMemory> PoolMemory::create(std::uint32_t workers) {
  if (workers == 0 || workers > kMaxPoolWorkers) {
    return Status::InvalidArgument("a worker pool has 1 to " + std::to_string(kMaxPoolWorkers) +
                                   " workers, not " + std::to_string(workers));
  }
  UniqueFd fd(::memfd_create("forkfeed-pool", MFD_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("memfd_create for the worker pool", errno);
  const std::size_t total = bytes_for(workers);
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(total)); err != 0) {
    return Status::FromErrno("allocating the worker pool's shared memory", err);
  }
  auto mapping = Mapping::map_shared(fd.get(), total);
  if (!mapping.ok()) return mapping.status();
  auto* block = new (mapping->data()) PoolBlock{kPoolMagic, kPoolVersion, workers};
  PoolMemory memory(std::move(fd), std::move(mapping).value());
  for (std::uint32_t w = 0; w < block->num_workers; ++w) memory.reset_worker(w);
  return memory;
}

Result<PoolMemory> PoolMemory::attach(UniqueFd fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("fstat of the worker pool fd", errno);
  const auto total = static_cast<std::size_t>(st.st_size);
  if (total < sizeof(PoolBlock)) return Status::InvalidArgument("not a forkfeed worker pool (too small)");
  auto mapping = Mapping::map_shared(fd.get(), total);
  if (!mapping.ok()) return mapping.status();
  const auto* block = reinterpret_cast<const PoolBlock*>(mapping->data());
  if (block->magic != kPoolMagic || block->version != kPoolVersion || block->num_workers == 0 ||
      block->num_workers > kMaxPoolWorkers || bytes_for(block->num_workers) > total) {
    return Status::InvalidArgument("not a worker pool of this forkfeed version (bad magic, version or size)");
  }
  return PoolMemory(std::move(fd), std::move(mapping).value());
}

WorkerState& PoolMemory::worker(std::uint32_t w) const {
  return reinterpret_cast<WorkerState*>(mapping_.data() + kStatesOffset)[w];
}

void PoolMemory::reset_worker(std::uint32_t w) const { new (&worker(w)) WorkerState(); }

}  // namespace forkfeed
