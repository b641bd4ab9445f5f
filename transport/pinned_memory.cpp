// PinnedRegistration: cudaHostRegister of the arena for one device, and the reasons it
// falls back to ordinary memory.
#include "transport/pinned_memory.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <utility>

#include "cuda/device_scope.h"

namespace forkfeed {

namespace {

// The region is the arena's MAP_SHARED memfd mapping: its pages are the very pages every
// worker maps, so locking them here locks what the workers write. Portable: they count
// as pinned in every CUDA context of this process, not only in the primary context of
// the device they were registered on (a trainer may copy from a context of its own).
constexpr unsigned kCudaHostRegisterPortable = 1;

std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return text;
}

}  // namespace

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
  std::unique_ptr<const CudaRuntime> rt = CudaRuntime::load(libraries, why_not);
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
    if (scope.status() != kCudaSuccess)
      return not_pinned("cudaSetDevice(" + std::to_string(device) + ") failed: " + rt->error(scope.status()));
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
      summary_(std::move(other.summary_)),
      owner_(other.owner_) {}

PinnedRegistration& PinnedRegistration::operator=(PinnedRegistration&& other) noexcept {
  if (this != &other) {
    release();
    runtime_ = std::move(other.runtime_);
    region_ = other.region_;
    device_ = other.device_;
    summary_ = std::move(other.summary_);
    owner_ = other.owner_;
  }
  return *this;
}

PinnedRegistration::~PinnedRegistration() { release(); }

void PinnedRegistration::release() {
  if (runtime_ == nullptr) return;
  const std::unique_ptr<const CudaRuntime> rt = std::move(runtime_);
  // In the child of a fork() the registration is the parent's, and CUDA must not be
  // called at all: the child's copy of the pages goes with its mapping.
  if (!owner_.here()) return;
  std::string error;
  {
    // Without device_ current, unregistering could initialise device 0 on this thread;
    // pages left locked until exit cost less than that.
    const DeviceScope scope(*rt, device_);
    if (scope.status() != kCudaSuccess) {
      error = "cudaSetDevice(" + std::to_string(device_) + ") failed: " + rt->error(scope.status());
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
