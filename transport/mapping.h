// Mapping: the one owner of an mmap'ed region; unmaps it exactly once.
#pragma once

#include <cstddef>
#include <utility>

#include "forkfeed/status.h"

namespace forkfeed {

class Mapping {
 public:
  Mapping() = default;
  // Maps |length| bytes of |fd| read-write, MAP_SHARED.
  static Result<Mapping> map_shared(int fd, std::size_t length);
  // Maps |length| bytes of |fd| read-only, MAP_SHARED (a client's view of an arena).
  static Result<Mapping> map_shared_readonly(int fd, std::size_t length);

  Mapping(Mapping&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)), length_(std::exchange(other.length_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }

  std::byte* data() const { return static_cast<std::byte*>(addr_); }
  std::size_t size() const { return length_; }
  void reset();

 private:
  Mapping(void* addr, std::size_t length) : addr_(addr), length_(length) {}
  void* addr_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace forkfeed
