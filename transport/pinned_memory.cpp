// PinnedRegistration: libcudart reached through dlopen and dlsym, with the few types it
// needs declared here, so that forkfeed builds and runs without CUDA.
#include "transport/pinned_memory.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace forkfeed {

using cudaError_t = int;
constexpr cudaError_t kCudaSuccess = 0;
constexpr cudaError_t kCudaErrorNoDevice = 100;  // how a machine without GPUs answers
// The region is the arena's MAP_SHARED memfd mapping: its pages are the very pages every
// worker maps, so locking them here locks what the workers write. Portable: they count
// as pinned in every CUDA context of this process, not only in the primary context of
// the device they were registered on (a trainer may copy from a context of its own).
constexpr unsigned kCudaHostRegisterPortable = 1;

struct CudaRuntime {
  cudaError_t (*get_device_count)(int* count) = nullptr;
  cudaError_t (*set_device)(int device) = nullptr;
  cudaError_t (*get_device)(int* device) = nullptr;
  cudaError_t (*host_register)(void* ptr, std::size_t bytes, unsigned flags) = nullptr;
  cudaError_t (*host_unregister)(void* ptr) = nullptr;
  cudaError_t (*runtime_get_version)(int* version) = nullptr;
  cudaError_t (*driver_get_version)(int* version) = nullptr;
  const char* (*get_error_string)(cudaError_t error) = nullptr;
  std::string library;  // the libcudart that was loaded
  std::string driver;   // where to ask whether a device has a primary context

  std::string error(cudaError_t rc) const {
    const char* text = get_error_string(rc);
    return std::string(text != nullptr ? text : "unknown error") + " (CUDA error " + std::to_string(rc) + ")";
  }
};

namespace {

template <typename Fn>
bool bind(void* handle, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

// The runtime, or why there is none.
std::unique_ptr<CudaRuntime> load_runtime(const CudaLibraries& libraries, std::string& why_not) {
  std::string tried;
  for (const std::string& name : libraries.runtimes) {
    // Never closed: libcudart does not support being unloaded while its contexts live.
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = ::dlerror();
      tried += (tried.empty() ? "" : "; ") + (error != nullptr ? std::string(error) : name);
      continue;
    }
    auto rt = std::make_unique<CudaRuntime>();
    std::string missing;
    bind(handle, "cudaGetDeviceCount", rt->get_device_count, missing);
    bind(handle, "cudaSetDevice", rt->set_device, missing);
    bind(handle, "cudaGetDevice", rt->get_device, missing);
    bind(handle, "cudaHostRegister", rt->host_register, missing);
    bind(handle, "cudaHostUnregister", rt->host_unregister, missing);
    bind(handle, "cudaRuntimeGetVersion", rt->runtime_get_version, missing);
    bind(handle, "cudaDriverGetVersion", rt->driver_get_version, missing);
    bind(handle, "cudaGetErrorString", rt->get_error_string, missing);
    if (!missing.empty()) {
      ::dlclose(handle);
      tried += (tried.empty() ? "" : "; ") + name + " lacks " + missing;
      continue;
    }
    rt->library = name;
    rt->driver = libraries.driver;
    return rt;
  }
  why_not = "no CUDA runtime could be loaded (" + (tried.empty() ? std::string("none to try") : tried) + ")";
  return nullptr;
}

// Whether |ordinal| has an active primary context, asked of the driver only if it is
// already loaded: if it is not, no context exists anywhere. Creates nothing; an answer
// it cannot get counts as "no", which at worst leaves the caller on our device.
bool has_primary_context(const std::string& driver, int ordinal) {
  void* handle = ::dlopen(driver.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  using DeviceGet = int (*)(int* device, int ordinal);
  using PrimaryCtxGetState = int (*)(int device, unsigned* flags, int* active);
  const auto get_device = reinterpret_cast<DeviceGet>(::dlsym(handle, "cuDeviceGet"));
  const auto get_state = reinterpret_cast<PrimaryCtxGetState>(::dlsym(handle, "cuDevicePrimaryCtxGetState"));
  int device = 0, active = 0;
  unsigned flags = 0;
  const bool yes = get_device != nullptr && get_state != nullptr && get_device(&device, ordinal) == 0 &&
                   get_state(device, &flags, &active) == 0 && active != 0;
  ::dlclose(handle);
  return yes;
}

// Makes |device| current on this thread while in scope. The previous device is made
// current again afterwards only if it has a primary context: on CUDA >= 12 selecting a
// device creates its context, and "restoring" device 0 that nobody used is the bug that
// costs every rank hundreds of MiB on GPU 0. cudaGetDevice creates nothing: without a
// context it answers 0, which then has no context and is left alone.
class DeviceScope {
 public:
  DeviceScope(const CudaRuntime& rt, int device) : rt_(rt) {
    int previous = -1;
    if (rt.get_device(&previous) == kCudaSuccess && previous != device && previous >= 0 &&
        has_primary_context(rt.driver, previous)) {
      restore_ = previous;
    }
    rc = rt.set_device(device);
  }
  ~DeviceScope() {
    if (rc == kCudaSuccess && restore_ >= 0) (void)rt_.set_device(restore_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  cudaError_t rc;

 private:
  const CudaRuntime& rt_;
  int restore_ = -1;
};

std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return text;
}

}  // namespace

CudaLibraries CudaLibraries::from_environment() {
  CudaLibraries libraries;
  if (const char* path = std::getenv("FORKFEED_CUDART"); path != nullptr && *path != '\0') {
    libraries.runtimes = {path};
  } else {
    libraries.runtimes = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  }
  libraries.driver = "libcuda.so.1";
  return libraries;
}

PinnedRegistration PinnedRegistration::pin(std::span<std::byte> region, int device,
                                           const CudaLibraries& libraries) {
  const std::string dev = "CUDA device " + std::to_string(device);
  auto not_pinned = [&](const std::string& why) {
    return PinnedRegistration(
        nullptr, region, device,
        "batch slots stay in ordinary (pageable) memory instead of pinned for " + dev + ": " + why);
  };
  if (region.empty()) return not_pinned("there is no memory to pin");
  std::string why_not;
  std::unique_ptr<CudaRuntime> rt = load_runtime(libraries, why_not);
  if (rt == nullptr) return not_pinned(why_not);

  int count = 0;
  if (const cudaError_t rc = rt->get_device_count(&count); rc != kCudaSuccess) {
    return not_pinned(rc == kCudaErrorNoDevice
                          ? "there is no CUDA device"
                          : "cudaGetDeviceCount of " + rt->library + " failed: " + rt->error(rc));
  }
  if (count == 0) return not_pinned("there is no CUDA device");
  if (device >= count) {
    return not_pinned("there are only " + std::to_string(count) +
                      " CUDA device(s) visible (CUDA_VISIBLE_DEVICES renumbers them from 0)");
  }
  {
    const DeviceScope scope(*rt, device);
    if (scope.rc != kCudaSuccess)
      return not_pinned("cudaSetDevice(" + std::to_string(device) + ") failed: " + rt->error(scope.rc));
    if (const cudaError_t rc = rt->host_register(region.data(), region.size(), kCudaHostRegisterPortable);
        rc != kCudaSuccess) {
      return not_pinned("cudaHostRegister of " + mib(region.size()) + " failed: " + rt->error(rc));
    }
  }
  int runtime_version = 0, driver_version = 0;
  (void)rt->runtime_get_version(&runtime_version);
  (void)rt->driver_get_version(&driver_version);
  std::string summary = "pinned " + mib(region.size()) + " of batch slots for " + dev + " (" + rt->library +
                        ", runtime " + version(runtime_version) + ", driver " + version(driver_version) + ")";
  return PinnedRegistration(std::move(rt), region, device, std::move(summary));
}

PinnedRegistration::PinnedRegistration(std::unique_ptr<const CudaRuntime> runtime,
                                       std::span<std::byte> region, int device, std::string summary)
    : runtime_(std::move(runtime)), region_(region), device_(device), summary_(std::move(summary)) {}

PinnedRegistration::PinnedRegistration(PinnedRegistration&& other) noexcept
    : runtime_(std::move(other.runtime_)),
      region_(other.region_),
      device_(other.device_),
      summary_(std::move(other.summary_)) {}

PinnedRegistration& PinnedRegistration::operator=(PinnedRegistration&& other) noexcept {
  if (this != &other) {
    release();
    runtime_ = std::move(other.runtime_);
    region_ = other.region_;
    device_ = other.device_;
    summary_ = std::move(other.summary_);
  }
  return *this;
}

PinnedRegistration::~PinnedRegistration() { release(); }

void PinnedRegistration::release() {
  if (runtime_ == nullptr) return;
  const std::unique_ptr<const CudaRuntime> rt = std::move(runtime_);
  std::string error;
  {
    // Without device_ current, unregistering could initialise device 0 on this thread;
    // pages left locked until exit cost less than that.
    const DeviceScope scope(*rt, device_);
    if (scope.rc != kCudaSuccess) {
      error = "cudaSetDevice(" + std::to_string(device_) + ") failed: " + rt->error(scope.rc);
    } else if (const cudaError_t rc = rt->host_unregister(region_.data()); rc != kCudaSuccess) {
      error = "cudaHostUnregister failed: " + rt->error(rc);
    }
  }
  if (error.empty()) return;
  const std::string message =
      "could not unpin the batch slots of CUDA device " + std::to_string(device_) + " (" + error + ")";
  if (auto log = spdlog::get("forkfeed")) {
    log->warn("{}", message);
  } else {
    spdlog::warn("{}", message);
  }
}

}  // namespace forkfeed
