// ForkSafety::assess: gathers the report from libibverbs, the process's fds, mappings
// and threads (through a ProcessView), and libcuda if something else loaded it.
#include "forkfeed/fork_safety.h"

#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cuda/driver.h"
#include "process/process_view.h"

namespace forkfeed {
namespace {

std::atomic<bool> rdma_mark{false};

// As libibverbs reads its variables: set to anything but "0", even "".
bool env_enabled(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "0") != 0;
}

RdmaForkMode rdma_fork_mode() {
  switch (ibv_is_fork_initialized()) {
    case IBV_FORK_ENABLED: return RdmaForkMode::kEnabled;
    case IBV_FORK_UNNEEDED: return RdmaForkMode::kUnneeded;
    case IBV_FORK_DISABLED: break;
  }
  return RdmaForkMode::kDisabled;
}

}  // namespace

ForkReport assess_fork_safety(const ProcessView& view) {
  ForkReport r;
  r.rdma_fork_mode = rdma_fork_mode();
  r.rdma_fork_env = env_enabled("RDMAV_FORK_SAFE") || env_enabled("IBV_FORK_SAFE");
  if (auto fds = rdma_device_fds(view); fds.ok()) {
    r.rdma_devices_open = std::move(*fds);
  } else {
    r.unchecked.push_back("open RDMA devices: " + fds.status().message());
  }
  if (auto maps = rdma_device_mappings(view); maps.ok()) {
    r.rdma_devices_open.insert(r.rdma_devices_open.end(), maps->begin(), maps->end());
  } else {
    r.unchecked.push_back("mapped RDMA devices: " + maps.status().message());
  }
  r.rdma_marked = rdma_mark.load(std::memory_order_relaxed);

  // Loaded is enough: UCX calls ibv_fork_init() and registers atfork handlers from its
  // first context on, and whoever loaded it (a remote Client, MPI, UCC) means to use it.
  if (void* ucx = ::dlopen(view.ucx_library.c_str(), RTLD_LAZY | RTLD_NOLOAD); ucx != nullptr) {
    r.ucx_loaded = true;
    ::dlclose(ucx);  // drops only the reference NOLOAD took
  }
  CudaUse cuda = probe_cuda(view.cuda_driver);
  r.cuda_loaded = cuda.loaded;
  r.cuda_active_devices = std::move(cuda.active_devices);
  if (!cuda.problem.empty()) r.unchecked.push_back("CUDA contexts: " + cuda.problem);

  if (auto threads = thread_count(view); threads.ok()) {
    r.threads = *threads;
  } else {
    r.unchecked.push_back("threads: " + threads.status().message());
  }
  return r;
}

ForkReport ForkSafety::assess() {
  ProcessView view;
  // Where RDMA device files live can be pointed elsewhere (containers that mount them
  // elsewhere; tests that open stand-in files a loader must notice).
  if (const char* dir = std::getenv("FORKFEED_RDMA_DEVICE_DIR"); dir != nullptr && *dir != '\0') {
    view.device_dir = dir;
  }
  return assess_fork_safety(view);
}

namespace rdma {
void mark_initialized() { rdma_mark.store(true, std::memory_order_relaxed); }
}  // namespace rdma

}  // namespace forkfeed
