// ForkSafety: whether forking this process now is safe — RDMA, CUDA and threads — found
// out without initialising any of them, and said in words a user can act on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forkfeed {

// libibverbs' fork support, as ibv_is_fork_initialized() reports it.
// kDisabled: registered memory is not protected across fork.
// kEnabled:  ibv_fork_init() ran (or RDMAV_FORK_SAFE / IBV_FORK_SAFE at its init):
//            registered pages are MADV_DONTFORK, absent from children.
// kUnneeded: the kernel copies pinned pages on fork; nothing to protect.
enum class RdmaForkMode { kDisabled, kEnabled, kUnneeded };

// What makes a fork unsafe, worst first.
enum class ForkHazard {
  kRdmaWithoutForkSupport,  // RDMA in use, fork support disabled: corruption or crash
  kRdmaForkSupport,         // RDMA in use, fork support enabled: children lack registered pages
  kUcx,                     // UCX is loaded: its atfork handlers and registrations forbid forking
  kCudaContext,             // a CUDA primary context is active
  kThreads,                 // other threads run: locks they hold stay locked in children
};

// A snapshot of this process, taken by ForkSafety::assess().
struct ForkReport {
  RdmaForkMode rdma_fork_mode = RdmaForkMode::kDisabled;  // ibv_is_fork_initialized() now
  // RDMAV_FORK_SAFE or IBV_FORK_SAFE is set to anything but "0", as libibverbs reads them.
  bool rdma_fork_env = false;
  // Open RDMA device files: "fd 7 -> /dev/infiniband/uverbs0", "mapping /dev/infiniband/uverbs0".
  std::vector<std::string> rdma_devices_open;
  bool rdma_marked = false;              // forkfeed::rdma::mark_initialized() was called
  bool ucx_loaded = false;               // libucp.so.0 (UCX) is loaded in this process
  bool cuda_loaded = false;              // libcuda.so.1 is loaded in this process
  std::vector<int> cuda_active_devices;  // devices with an active primary context
  int threads = 0;                       // threads of this process; 0 if unknown
  // What could not be checked, and why ("cannot open /proc/self/maps: ..."); empty normally.
  std::vector<std::string> unchecked;

  // Returns true iff a device file is open or mapped, or mark_initialized() was called.
  bool rdma_in_use() const;
  // rdma_fork_mode, except that kDisabled reads kEnabled when rdma_fork_env is set:
  // libibverbs calls ibv_fork_init() for it when it initialises, before any device opens.
  RdmaForkMode effective_rdma_fork_mode() const;
  std::vector<ForkHazard> hazards() const;
  bool hazardous() const { return !hazards().empty(); }
  // One line for logs: "no fork hazard", or the hazards, e.g.
  // "RDMA in use without fork support (fd 7 -> /dev/infiniband/uverbs0); 3 threads".
  std::string summary() const;
  // A paragraph for users: each hazard with its consequence, the remedies, and what was
  // found; or that there is no hazard.
  std::string describe() const;
};

class ForkSafety {
 public:
  // Looks at this process: /proc/self, libibverbs, whether UCX is loaded, and libcuda if
  // already loaded. Never
  // initialises RDMA or CUDA, never loads a library. Safe to call from any thread.
  static ForkReport assess();
};

namespace rdma {
// Tells forkfeed that this process initialised RDMA, for frameworks that know it
// (detection of open device files covers those that do not). Irrevocable.
void mark_initialized();
}  // namespace rdma

// "disabled", "enabled", "unneeded".
std::string_view to_string(RdmaForkMode mode);

}  // namespace forkfeed
