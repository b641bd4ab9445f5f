// ForkCopy: the list of held ranges and the fork handlers that copy them into the child.
#include "transport/fork_copy.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace forkfeed {

struct ForkCopyRegistry {
  // Held from the prepare handler to the end of the fork, so that no range is added or
  // let go of while the child copies.
  static inline pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static inline ForkCopy* head = nullptr;
  // The fork in progress: the parent waits on done[0] until the child has copied (one
  // byte) or is gone (EOF). -1 when nothing is to be copied, or no pipe could be made.
  static inline int done[2] = {-1, -1};
  static inline thread_local int shared_scopes = 0;

  static void install() {
    static const int installed = ::pthread_atfork(prepare, parent, child);
    (void)installed;  // without the handlers (ENOMEM) a child shares, as before
  }

  static void prepare() {
    ::pthread_mutex_lock(&mu);
    if (head != nullptr && shared_scopes == 0) {
      const int saved = errno;
      if (::pipe2(done, O_CLOEXEC) != 0) done[0] = done[1] = -1;  // the child still copies
      errno = saved;
    }
  }

  static void parent() {
    if (done[0] >= 0) {
      const int saved = errno;  // fork()'s own, when it failed
      ::close(done[1]);
      char byte;
      while (::read(done[0], &byte, 1) < 0 && errno == EINTR) {
      }
      ::close(done[0]);
      done[0] = done[1] = -1;
      errno = saved;
    }
    ::pthread_mutex_unlock(&mu);
  }

  static void child() {
    const int saved = errno;
    if (shared_scopes == 0) {
      for (ForkCopy* c = head; c != nullptr; c = c->next_) copy_in_place(c->begin_, c->length_);
    }
    if (done[1] >= 0) {
      const char byte = 1;
      (void)!::write(done[1], &byte, 1);
      ::close(done[0]);
      ::close(done[1]);
      done[0] = done[1] = -1;
    }
    ::pthread_mutex_init(&mu, nullptr);  // the parent's forking thread held it: a fresh one
    errno = saved;
  }

  // Puts a private copy of [begin, begin + length) at the same address. mremap() by its
  // system call: a library that hooks the libc function (UCX's, once a remote Client loaded
  // it) may drop its fifth argument, the address, and move the copy elsewhere.
  static void copy_in_place(std::byte* begin, std::size_t length) {
    void* copy = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy != MAP_FAILED) {
      std::memcpy(copy, begin, length);
      const long moved = ::syscall(SYS_mremap, copy, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, begin);
      if (moved == reinterpret_cast<long>(begin)) return;
      ::munmap(copy, length);
    }
    // Out of memory: reading the batch in the child faults rather than shows another one.
    ::mmap(begin, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
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
