// CudaProbe: whether this process already uses CUDA, asked of the driver only if
// something else loaded it, and never initialising it.
#pragma once

#include <string>
#include <vector>

namespace forkfeed {

struct CudaUse {
  bool loaded = false;              // the driver library is loaded
  std::vector<int> active_devices;  // ordinals with an active primary context
  std::string problem;              // why active_devices may be incomplete; "" if not
};

// Looks for |driver| ("libcuda.so.1") among the loaded libraries, never loading it, and
// asks it which devices have an active primary context. Never calls cuInit: a driver
// that is loaded but not initialised holds no context.
CudaUse probe_cuda(const std::string& driver);

}  // namespace forkfeed
