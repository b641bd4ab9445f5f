// CudaRuntime: the few libcudart entry points forkfeed uses, loaded at run time with
// dlopen, with the types they need declared here, so that forkfeed builds and runs
// without CUDA.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace forkfeed {

using cudaError_t = int;
inline constexpr cudaError_t kCudaSuccess = 0;
inline constexpr cudaError_t kCudaErrorNoDevice = 100;  // how a machine without GPUs answers

// Where CUDA is looked for.
struct CudaLibraries {
  std::vector<std::string> runtimes;  // libcudart names or paths, tried in order
  std::string driver;                 // libcuda, consulted only if already loaded

  // $FORKFEED_CUDART if set, else the usual libcudart sonames; the driver libcuda.so.1.
  static CudaLibraries from_environment();
};

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

  // The first of |libraries|' runtimes that loads and has every entry point, or null
  // with |why_not| saying what was tried. The library is never unloaded: libcudart
  // does not support it while its contexts live.
  static std::unique_ptr<const CudaRuntime> load(const CudaLibraries& libraries, std::string& why_not);

  // "<cudaGetErrorString> (CUDA error <rc>)".
  std::string error(cudaError_t rc) const;
};

}  // namespace forkfeed
