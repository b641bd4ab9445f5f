// ProcessView: where ForkSafety looks at this process — its /proc directory, the RDMA
// device directory, the CUDA driver's name — so tests can run the real scanners elsewhere.
#pragma once

#include <string>
#include <vector>

#include "forkfeed/fork_safety.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct ProcessView {
  std::string proc_self = "/proc/self";
  std::string device_dir = "/dev/infiniband";
  std::string cuda_driver = "libcuda.so.1";
  std::string ucx_library = "libucp.so.0";
};

// RDMA device files (uverbs*, rdma_cm directly under view.device_dir) among the open fds
// of proc_self/fd: "fd 7 -> /dev/infiniband/uverbs0", in fd order.
Result<std::vector<std::string>> rdma_device_fds(const ProcessView& view);
// The same among the mappings of proc_self/maps, once per file: "mapping /dev/infiniband/uverbs0".
Result<std::vector<std::string>> rdma_device_mappings(const ProcessView& view);
// Entries of proc_self/task.
Result<int> thread_count(const ProcessView& view);

// ForkSafety::assess() as seen through |view|; assess() passes the defaults.
ForkReport assess_fork_safety(const ProcessView& view);

}  // namespace forkfeed
