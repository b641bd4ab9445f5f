// The CUDA driver API reached through dlopen(RTLD_NOLOAD) and dlsym, with the few types
// it needs declared here so that forkfeed builds without CUDA.
#include "cuda/driver.h"

#include <dlfcn.h>

#include <memory>

namespace forkfeed {
namespace {

using CUresult = int;
using CUdevice = int;
constexpr CUresult kCuSuccess = 0;
constexpr CUresult kCuNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED: cuInit never ran
constexpr CUresult kCuDeinitialized = 4;   // CUDA_ERROR_DEINITIALIZED: shutting down

struct DlCloser {
  void operator()(void* handle) const { ::dlclose(handle); }
};

// The driver if it is loaded already, with the entry points we ask. Holds a reference
// to the library while it lives; loads nothing.
class LoadedDriver {
 public:
  explicit LoadedDriver(const std::string& driver)
      // RTLD_NOLOAD: a handle only if already loaded.
      : handle_(::dlopen(driver.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    if (handle_ == nullptr) return;
    get_count_ = symbol<decltype(get_count_)>("cuDeviceGetCount");
    get_device_ = symbol<decltype(get_device_)>("cuDeviceGet");
    get_state_ = symbol<decltype(get_state_)>("cuDevicePrimaryCtxGetState");
  }

  bool loaded() const { return handle_ != nullptr; }
  bool can_count() const { return get_count_ != nullptr; }
  bool can_read_contexts() const { return get_device_ != nullptr && get_state_ != nullptr; }

  // REQUIRES: can_count()
  CUresult device_count(int& count) const { return get_count_(&count); }
  // Whether |ordinal|'s primary context is active, in |active|. REQUIRES: can_read_contexts()
  CUresult primary_context_active(int ordinal, bool& active) const {
    CUdevice device = 0;
    unsigned flags = 0;
    int state = 0;
    CUresult rc = get_device_(&device, ordinal);
    if (rc == kCuSuccess) rc = get_state_(device, &flags, &state);
    active = rc == kCuSuccess && state != 0;
    return rc;
  }

 private:
  template <typename Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(::dlsym(handle_.get(), name));
  }

  std::unique_ptr<void, DlCloser> handle_;
  CUresult (*get_count_)(int* count) = nullptr;
  CUresult (*get_device_)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*get_state_)(CUdevice device, unsigned* flags, int* active) = nullptr;
};

}  // namespace

CudaUse probe_cuda(const std::string& driver) {
  CudaUse use;
  const LoadedDriver cuda(driver);
  if (!cuda.loaded()) return use;
  use.loaded = true;
  if (!cuda.can_count() || !cuda.can_read_contexts()) {
    use.problem = driver + " lacks cuDeviceGetCount, cuDeviceGet or cuDevicePrimaryCtxGetState";
    return use;
  }
  int count = 0;
  const CUresult rc = cuda.device_count(count);
  if (rc == kCuNotInitialized || rc == kCuDeinitialized) return use;
  if (rc != kCuSuccess) {
    use.problem = "cuDeviceGetCount failed with CUDA error " + std::to_string(rc);
    return use;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    bool active = false;
    if (const CUresult state_rc = cuda.primary_context_active(ordinal, active); state_rc != kCuSuccess) {
      use.problem = "cannot read the primary context of CUDA device " + std::to_string(ordinal) +
                    ": CUDA error " + std::to_string(state_rc);
    } else if (active) {
      use.active_devices.push_back(ordinal);
    }
  }
  return use;
}

bool has_primary_context(const std::string& driver, int ordinal) {
  const LoadedDriver cuda(driver);
  bool active = false;
  return cuda.loaded() && cuda.can_read_contexts() &&
         cuda.primary_context_active(ordinal, active) == kCuSuccess && active;
}

}  // namespace forkfeed
