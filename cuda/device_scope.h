// DeviceScope: one CUDA device current on this thread for a while, without creating a
// context on any other device.
#pragma once

#include "cuda/runtime.h"

namespace forkfeed {

// Makes |device| current on this thread while in scope. The previous device is made
// current again afterwards only if it has a primary context: on CUDA >= 12 selecting a
// device creates its context, and "restoring" device 0 that nobody used is the bug that
// costs every rank hundreds of MiB on GPU 0. cudaGetDevice creates nothing: without a
// context it answers 0, which then has no context and is left alone.
class DeviceScope {
 public:
  DeviceScope(const CudaRuntime& rt, int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  // cudaSetDevice's answer: the scope holds |device| only if this is kCudaSuccess.
  cudaError_t status() const { return rc_; }

 private:
  const CudaRuntime& rt_;
  int restore_ = -1;
  cudaError_t rc_;
};

}  // namespace forkfeed
