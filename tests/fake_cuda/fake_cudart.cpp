// A test double of libcudart (and of the three libcuda calls forkfeed makes), loaded
// through the same dlopen seam as the real one. It models what matters for device
// discipline: a device gets a primary context on its first cudaSetDevice (as on CUDA
// >= 12), and a registration with no device current initialises device 0.
//
//   FAKE_CUDA_DEVICES  number of devices (default 2)
//   FAKE_CUDA_LOG      file that gets one line per call: "<function> <args> device=<current>",
//                      and "context <N>" when device N gets its primary context
//   FAKE_CUDA_FAIL     name of a function that fails with cudaErrorUnknown
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNoDevice = 100;
constexpr int kInvalidDevice = 101;
constexpr int kAlreadyRegistered = 712;
constexpr int kNotRegistered = 713;
constexpr int kUnknown = 999;

std::mutex mu;
std::set<int> contexts;                      // devices with a primary context
std::map<void*, std::size_t> registrations;  // base -> bytes
thread_local int current = -1;               // no context current on this thread

int device_count() {
  const char* env = std::getenv("FAKE_CUDA_DEVICES");
  return env != nullptr ? std::atoi(env) : 2;
}

void record(const std::string& line) {
  const char* path = std::getenv("FAKE_CUDA_LOG");
  if (path == nullptr) return;
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

void call(const char* function, const std::string& args = "") {
  record(std::string(function) + (args.empty() ? "" : " " + args) + " device=" + std::to_string(current));
}

bool failing(const char* function) {
  const char* env = std::getenv("FAKE_CUDA_FAIL");
  return env != nullptr && std::strcmp(env, function) == 0;
}

// REQUIRES: mu held.
void make_current(int device) {
  if (contexts.insert(device).second) record("context " + std::to_string(device));
  current = device;
}

std::string pointer(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

extern "C" {

// Forgets every context, registration and this thread's current device; the log stays.
void fake_cuda_reset() {
  const std::lock_guard lock(mu);
  contexts.clear();
  registrations.clear();
  current = -1;
}

int cudaGetDeviceCount(int* count) {
  const std::lock_guard lock(mu);
  *count = device_count();
  call("cudaGetDeviceCount", std::to_string(*count));
  if (failing("cudaGetDeviceCount")) return kUnknown;
  return *count == 0 ? kNoDevice : kSuccess;
}

// Creates nothing: without a context current it answers 0, as CUDA does.
int cudaGetDevice(int* device) {
  const std::lock_guard lock(mu);
  *device = current < 0 ? 0 : current;
  call("cudaGetDevice", std::to_string(*device));
  return kSuccess;
}

int cudaSetDevice(int device) {
  const std::lock_guard lock(mu);
  if (failing("cudaSetDevice")) {
    call("cudaSetDevice", std::to_string(device) + " failed");
    return kUnknown;
  }
  if (device < 0 || device >= device_count()) {
    call("cudaSetDevice", std::to_string(device) + " invalid");
    return kInvalidDevice;
  }
  make_current(device);
  call("cudaSetDevice", std::to_string(device));
  return kSuccess;
}

int cudaHostRegister(void* ptr, std::size_t bytes, unsigned flags) {
  const std::lock_guard lock(mu);
  if (current < 0) make_current(0);  // the runtime's implicit initialisation
  call("cudaHostRegister", pointer(ptr) + " " + std::to_string(bytes) + " flags=" + std::to_string(flags));
  if (failing("cudaHostRegister")) return kUnknown;
  if (ptr == nullptr || bytes == 0) return kInvalidValue;
  if (!registrations.emplace(ptr, bytes).second) return kAlreadyRegistered;
  return kSuccess;
}

int cudaHostUnregister(void* ptr) {
  const std::lock_guard lock(mu);
  if (current < 0) make_current(0);
  call("cudaHostUnregister", pointer(ptr));
  if (failing("cudaHostUnregister")) return kUnknown;
  return registrations.erase(ptr) == 1 ? kSuccess : kNotRegistered;
}

int cudaRuntimeGetVersion(int* version) {
  *version = 12080;
  return kSuccess;
}

int cudaDriverGetVersion(int* version) {
  *version = 12080;
  return kSuccess;
}

const char* cudaGetErrorString(int error) {
  switch (error) {
    case kSuccess: return "no error";
    case kInvalidValue: return "invalid argument";
    case kNoDevice: return "no CUDA-capable device is detected";
    case kInvalidDevice: return "invalid device ordinal";
    case kAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case kNotRegistered: return "pointer does not correspond to a registered memory region";
    default: return "unknown error";
  }
}

// libcuda's side: a device ordinal is its handle.
int cuDeviceGetCount(int* count) {
  *count = device_count();
  return kSuccess;
}

int cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return ordinal >= 0 && ordinal < device_count() ? kSuccess : kInvalidDevice;
}

int cuDevicePrimaryCtxGetState(int device, unsigned* flags, int* active) {
  const std::lock_guard lock(mu);
  *flags = 0;
  *active = contexts.count(device) != 0 ? 1 : 0;
  return kSuccess;
}

}  // extern "C"
