// SpscRing: a bounded single-producer/single-consumer queue that lives in shared memory.
// Lock-free, so a process killed in the middle of push or pop wedges nobody: the other
// side only ever sees whole elements (invariant 5 in DESIGN.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace forkfeed {

template <typename T, std::uint32_t kCapacity>
class SpscRing {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>);
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

 public:
  static constexpr std::uint32_t capacity() { return kCapacity; }

  // Producer side. Returns false when full.
  bool try_push(const T& item) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) == kCapacity) return false;
    items_[tail & (kCapacity - 1)] = item;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. Returns nullopt when empty.
  std::optional<T> try_pop() {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return std::nullopt;
    T item = items_[head & (kCapacity - 1)];
    head_.store(head + 1, std::memory_order_release);
    return item;
  }

  std::uint64_t size() const {
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }

 private:
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) T items_[kCapacity]{};
};

}  // namespace forkfeed
