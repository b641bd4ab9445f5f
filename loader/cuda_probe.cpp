// probe_cuda: the CUDA driver API reached through dlsym, with the few types it needs
// declared here so that forkfeed builds without CUDA.
#include "loader/cuda_probe.h"

#include <dlfcn.h>

#include <memory>

namespace forkfeed {
namespace {

using CUresult = int;
using CUdevice = int;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED: cuInit never ran
constexpr CUresult kCudaDeinitialized = 4;   // CUDA_ERROR_DEINITIALIZED: shutting down

using DeviceGetCount = CUresult (*)(int* count);
using DeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PrimaryCtxGetState = CUresult (*)(CUdevice device, unsigned* flags, int* active);

struct DlCloser {
  void operator()(void* handle) const { ::dlclose(handle); }
};

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(handle, name));
}

}  // namespace

CudaUse probe_cuda(const std::string& driver) {
  CudaUse use;
  // RTLD_NOLOAD: a handle only if already loaded; it holds a reference we drop on return.
  const std::unique_ptr<void, DlCloser> handle(::dlopen(driver.c_str(), RTLD_NOW | RTLD_NOLOAD));
  if (handle == nullptr) return use;
  use.loaded = true;

  const auto get_count = symbol<DeviceGetCount>(handle.get(), "cuDeviceGetCount");
  const auto get_device = symbol<DeviceGet>(handle.get(), "cuDeviceGet");
  const auto get_state = symbol<PrimaryCtxGetState>(handle.get(), "cuDevicePrimaryCtxGetState");
  if (get_count == nullptr || get_device == nullptr || get_state == nullptr) {
    use.problem = driver + " lacks cuDeviceGetCount, cuDeviceGet or cuDevicePrimaryCtxGetState";
    return use;
  }
  int count = 0;
  const CUresult rc = get_count(&count);
  if (rc == kCudaNotInitialized || rc == kCudaDeinitialized) return use;
  if (rc != kCudaSuccess) {
    use.problem = "cuDeviceGetCount failed with CUDA error " + std::to_string(rc);
    return use;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    unsigned flags = 0;
    int active = 0;
    CUresult state_rc = get_device(&device, ordinal);
    if (state_rc == kCudaSuccess) state_rc = get_state(device, &flags, &active);
    if (state_rc != kCudaSuccess) {
      use.problem = "cannot read the primary context of CUDA device " + std::to_string(ordinal) +
                    ": CUDA error " + std::to_string(state_rc);
    } else if (active != 0) {
      use.active_devices.push_back(ordinal);
    }
  }
  return use;
}

}  // namespace forkfeed
