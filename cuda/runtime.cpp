// CudaRuntime: finding libcudart ($FORKFEED_CUDART, else the usual sonames) and binding
// its entry points by name.
#include "cuda/runtime.h"

#include <dlfcn.h>

#include <cstdlib>

namespace forkfeed {
namespace {

template <typename Fn>
void bind(void* handle, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
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

std::unique_ptr<const CudaRuntime> CudaRuntime::load(const CudaLibraries& libraries, std::string& why_not) {
  std::string tried;
  for (const std::string& name : libraries.runtimes) {
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

std::string CudaRuntime::error(cudaError_t rc) const {
  const char* text = get_error_string(rc);
  return std::string(text != nullptr ? text : "unknown error") + " (CUDA error " + std::to_string(rc) + ")";
}

}  // namespace forkfeed
