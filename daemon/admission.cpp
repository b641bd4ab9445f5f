// Admission: limits, and each stream's cap on its share of the pool.
#include "daemon/admission.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "plan/slot_count.h"

namespace forkfeed {

Admission::Admission(Limits limits) : limits_(limits) {
  if (limits_.max_workers == 0) limits_.max_workers = std::max(1u, std::thread::hardware_concurrency());
  if (limits_.max_arena_bytes == 0) limits_.max_arena_bytes = slot_memory_limit();
  if (limits_.max_stream_arena_bytes == 0) limits_.max_stream_arena_bytes = limits_.max_arena_bytes;
}

Result<Admission::Ticket> Admission::admit(const LoaderOptions& options) {
  std::lock_guard lock(mu_);
  if (used_.streams >= limits_.max_streams) {
    return Status::ResourceExhausted("forkfeedd serves its maximum of " +
                                     std::to_string(limits_.max_streams) +
                                     " streams (max_streams); close one or raise --max-streams");
  }
  // Every stream shares the pool's workers; `workers` caps how many it keeps busy at
  // once. Its batch slots are its own options' (workers x prefetch + 1), as a Loader's
  // with the same options: the pool's size changes what it may hold in no way.
  const std::uint32_t cap = limits_.max_stream_workers > 0 ? limits_.max_stream_workers : limits_.max_workers;
  const std::uint32_t workers = std::min({std::max(options.workers, 1u), cap, limits_.max_workers});
  const std::uint64_t bytes = arena_batch_bytes(options);
  if (bytes > limits_.max_stream_arena_bytes) {
    return Status::ResourceExhausted(
        "the stream's batch slots need " + whole_mib(bytes) + " (" + std::to_string(slot_count(options)) +
        " slots of " + std::to_string(options.batch_size) + " samples), over forkfeedd's " +
        whole_mib(limits_.max_stream_arena_bytes) +
        " per stream (max_stream_arena_bytes); lower batch_size, size, workers or prefetch");
  }
  if (used_.arena_bytes + bytes > limits_.max_arena_bytes) {
    return Status::ResourceExhausted(
        "the stream's batch slots need " + whole_mib(bytes) + " but only " +
        whole_mib(limits_.max_arena_bytes - std::min(used_.arena_bytes, limits_.max_arena_bytes)) +
        " of forkfeedd's " + whole_mib(limits_.max_arena_bytes) +
        " (max_arena_bytes) are free; wait for a stream to close or lower batch_size, "
        "size, workers or prefetch");
  }
  used_.streams += 1;
  used_.workers += workers;
  used_.arena_bytes += bytes;
  Ticket t;
  t.admission_ = this;
  t.workers_ = workers;
  t.arena_bytes_ = bytes;
  return t;
}

Status Admission::grow(Ticket& t, std::uint64_t bytes, const std::string& what) {
  std::lock_guard lock(mu_);
  const std::uint64_t total = t.arena_bytes_ + bytes;
  if (total > limits_.max_stream_arena_bytes) {
    return Status::ResourceExhausted("the stream's batch slots need " + whole_mib(total) +
                                     " with its fields (" + what + "), over forkfeedd's " +
                                     whole_mib(limits_.max_stream_arena_bytes) +
                                     " per stream (max_stream_arena_bytes); lower batch_size, workers or "
                                     "prefetch, or refuse large members with max_file_bytes");
  }
  if (used_.arena_bytes + bytes > limits_.max_arena_bytes) {
    return Status::ResourceExhausted(
        "the stream's fields need " + whole_mib(bytes) + " more in its batch slots (" + what + ") but only " +
        whole_mib(limits_.max_arena_bytes - std::min(used_.arena_bytes, limits_.max_arena_bytes)) +
        " of forkfeedd's " + whole_mib(limits_.max_arena_bytes) +
        " (max_arena_bytes) are free; wait for a stream to close or lower "
        "batch_size, workers or prefetch");
  }
  used_.arena_bytes += bytes;
  t.arena_bytes_ = total;
  return Status::Ok();
}

Status Admission::Ticket::grow(std::uint64_t bytes, const std::string& what) {
  return admission_ == nullptr ? Status::Ok() : admission_->grow(*this, bytes, what);
}

void Admission::release(const Ticket& t) {
  std::lock_guard lock(mu_);
  used_.streams -= 1;
  used_.workers -= t.workers_;
  used_.arena_bytes -= t.arena_bytes_;
}

Admission::Totals Admission::totals() const {
  std::lock_guard lock(mu_);
  return used_;
}

Admission::Ticket::Ticket(Ticket&& other) noexcept
    : admission_(std::exchange(other.admission_, nullptr)),
      workers_(other.workers_),
      arena_bytes_(other.arena_bytes_) {}

Admission::Ticket& Admission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (admission_ != nullptr) admission_->release(*this);
    admission_ = std::exchange(other.admission_, nullptr);
    workers_ = other.workers_;
    arena_bytes_ = other.arena_bytes_;
  }
  return *this;
}

Admission::Ticket::~Ticket() {
  if (admission_ != nullptr) admission_->release(*this);
}

}  // namespace forkfeed
