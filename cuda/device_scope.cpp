// DeviceScope: set a device for a while, and put back the one current before only if it
// already had a context (never creating one on another GPU).
#include "cuda/device_scope.h"

#include "cuda/driver.h"

namespace forkfeed {

DeviceScope::DeviceScope(const CudaRuntime& rt, int device) : rt_(rt) {
  int previous = -1;
  if (rt.get_device(&previous) == kCudaSuccess && previous != device && previous >= 0 &&
      has_primary_context(rt.driver, previous)) {
    restore_ = previous;
  }
  rc_ = rt.set_device(device);
}

DeviceScope::~DeviceScope() {
  if (rc_ == kCudaSuccess && restore_ >= 0) (void)rt_.set_device(restore_);
}

}  // namespace forkfeed
