// ForkCopy: the list of held ranges and the fork handlers that copy them into the child.
#include "transport/fork_copy.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace forkfeed {

struct ForkCopyRegistry {
  // Held from the prepare handler to the end of the fork, so that no range is added or
  // let go of between its copy and the child's taking it.
  static inline pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static inline ForkCopy* head = nullptr;
  static inline thread_local int shared_scopes = 0;

  static void install() {
    static const int installed = ::pthread_atfork(prepare, parent, child);
    (void)installed;  // without the handlers (ENOMEM) a child shares, as before
  }

  // The parent copies, not the child: a range the child does not inherit (memory
  // registered for RDMA is madvise(MADV_DONTFORK)) is still the parent's to read.
  static void prepare() {
    ::pthread_mutex_lock(&mu);
    if (shared_scopes != 0) return;
    const int saved = errno;
    for (ForkCopy* c = head; c != nullptr; c = c->next_) {
      void* copy = ::mmap(nullptr, c->length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (copy == MAP_FAILED) continue;  // the child is told
      std::memcpy(copy, c->begin_, c->length_);
      c->copy_ = static_cast<std::byte*>(copy);
    }
    errno = saved;
  }

  static void parent() {
    const int saved = errno;  // fork()'s own, when it failed
    for (ForkCopy* c = head; c != nullptr; c = c->next_) {
      if (c->copy_ != nullptr) ::munmap(std::exchange(c->copy_, nullptr), c->length_);
    }
    errno = saved;
    ::pthread_mutex_unlock(&mu);
  }

  static void child() {
    const int saved = errno;
    if (shared_scopes == 0) {
      for (ForkCopy* c = head; c != nullptr; c = c->next_) {
        move_into_place(std::exchange(c->copy_, nullptr), c->begin_, c->length_);
      }
    }
    ::pthread_mutex_init(&mu, nullptr);  // the parent's forking thread held it: a fresh one
    errno = saved;
  }

  // Puts `copy` (null: none could be made) in the place of [begin, begin + length). By
  // system calls, not libc's functions: a library that hooks them (UCX's, once a remote
  // Client loaded it) may drop mremap's fifth argument, the address, and move the copy
  // elsewhere, or take a lock a thread of the parent held at the fork.
  static void move_into_place(std::byte* copy, std::byte* begin, std::size_t length) {
    if (copy != nullptr) {
      const long moved = ::syscall(SYS_mremap, copy, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, begin);
      if (moved == reinterpret_cast<long>(begin)) return;
      (void)::syscall(SYS_munmap, copy, length);
    }
    // Out of memory: reading the batch in the child faults rather than shows another one.
    (void)::syscall(SYS_mmap, begin, length, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    static const char kMessage[] =
        "forkfeed: this child of fork() had no memory to copy a batch its parent held; reading that batch "
        "here will fault\n";
    (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  }
};

ForkCopy::ForkCopy(std::span<const std::byte> memory) {
  if (memory.empty()) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(memory.data()) & ~(page - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(memory.data()) + memory.size() + page - 1) & ~(page - 1);
  begin_ = reinterpret_cast<std::byte*>(first);
  length_ = end - first;
  ForkCopyRegistry::install();
  ::pthread_mutex_lock(&ForkCopyRegistry::mu);
  next_ = ForkCopyRegistry::head;
  if (next_ != nullptr) next_->prev_ = this;
  ForkCopyRegistry::head = this;
  ::pthread_mutex_unlock(&ForkCopyRegistry::mu);
}

ForkCopy::~ForkCopy() {
  if (length_ == 0) return;
  ::pthread_mutex_lock(&ForkCopyRegistry::mu);  // waits out a fork copying this range
  if (prev_ != nullptr) prev_->next_ = next_;
  if (next_ != nullptr) next_->prev_ = prev_;
  if (ForkCopyRegistry::head == this) ForkCopyRegistry::head = next_;
  ::pthread_mutex_unlock(&ForkCopyRegistry::mu);
}

ForkCopy::SharedScope::SharedScope() { ++ForkCopyRegistry::shared_scopes; }
ForkCopy::SharedScope::~SharedScope() { --ForkCopyRegistry::shared_scopes; }

}  // namespace forkfeed
