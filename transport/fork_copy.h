// ForkCopy: memory that a child of fork() gets as a private copy of what it held at the
// fork, where it would otherwise go on sharing it with this process.
//
// A Batch is a view of shared memory that its loader (or forkfeedd) fills again once the
// Batch is released. A trainer that forks while holding one (os.fork(), a DataLoader's
// workers, a checkpoint writer) gives the child a copy of the Batch over the same pages:
// as the parent read on, the child's batch turned into later batches — keys of one
// sample beside the labels and pixels of another. Each Batch registers its slot here;
// inside fork() the parent copies every registered range into private memory, and the
// child moves the copies into place (same addresses, so every pointer and tensor into it
// stays valid). A range cannot be let go of meanwhile (release waits), so the child holds
// exactly what the parent held. The cost: a memcpy of the held slots.
//
// The library's own children (ChildProcess::fork: workers, which write into the slots)
// must share them: a fork made inside a ForkCopy::SharedScope copies nothing.
#pragma once

#include <cstddef>
#include <span>

namespace forkfeed {

class ForkCopy {
 public:
  // Registers `memory`, rounded out to whole pages (a neighbour's pages are copied too:
  // the child cannot use them anyway), until destroyed. Empty memory registers nothing.
  explicit ForkCopy(std::span<const std::byte> memory);
  ~ForkCopy();
  ForkCopy(const ForkCopy&) = delete;
  ForkCopy& operator=(const ForkCopy&) = delete;

  // While one lives, a fork() on this thread gives its child the registered ranges
  // shared, as they are mapped.
  class SharedScope {
   public:
    SharedScope();
    ~SharedScope();
    SharedScope(const SharedScope&) = delete;
    SharedScope& operator=(const SharedScope&) = delete;
  };

 private:
  friend struct ForkCopyRegistry;
  std::byte* begin_ = nullptr;  // page aligned
  std::size_t length_ = 0;      // whole pages
  ForkCopy* prev_ = nullptr;    // the registry's list; no allocation under its lock
  ForkCopy* next_ = nullptr;
  std::byte* copy_ = nullptr;  // during a fork: the child's copy, made by the parent
};

}  // namespace forkfeed
