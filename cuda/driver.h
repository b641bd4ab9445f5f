// The CUDA driver (libcuda), asked only if something else already loaded it: nothing
// here loads it, initialises it or creates a context. Used by the fork-safety probe
// (does this process use CUDA?) and by DeviceScope (may a device be made current again?).
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

// Whether device |ordinal| has an active primary context. False when |driver| is not
// loaded (then no context exists anywhere) and when the driver cannot say.
bool has_primary_context(const std::string& driver, int ordinal);

}  // namespace forkfeed
