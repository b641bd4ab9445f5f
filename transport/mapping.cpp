// Mapping: mmap/munmap ownership.
#include "transport/mapping.h"

#include <sys/mman.h>

#include <cerrno>

namespace forkfeed {

Result<Mapping> Mapping::map_shared(int fd, std::size_t length) {
  void* addr = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return Status::FromErrno("mmap of the shared memory arena", errno);
  return Mapping(addr, length);
}

Result<Mapping> Mapping::map_shared_readonly(int fd, std::size_t length) {
  void* addr = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return Status::FromErrno("read-only mmap of the shared memory arena", errno);
  return Mapping(addr, length);
}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    reset();
    addr_ = std::exchange(other.addr_, nullptr);
    length_ = std::exchange(other.length_, 0);
  }
  return *this;
}

void Mapping::reset() {
  if (addr_ != nullptr) ::munmap(addr_, length_);
  addr_ = nullptr;
  length_ = 0;
}

}  // namespace forkfeed
