// The driver probe (cuda/driver.h) against the fake libcuda: it reads contexts only from
// a driver that is already loaded, and creates none.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "cuda/driver.h"

namespace forkfeed {
namespace {

struct FakeDriver {
  FakeDriver() : lib(::dlopen(FAKE_CUDART, RTLD_NOW | RTLD_LOCAL)) {
    if (lib == nullptr) std::abort();
    reset = reinterpret_cast<void (*)()>(::dlsym(lib, "fake_cuda_reset"));
    set_device = reinterpret_cast<int (*)(int)>(::dlsym(lib, "cudaSetDevice"));
    if (reset == nullptr || set_device == nullptr) std::abort();
    reset();
  }
  ~FakeDriver() { ::dlclose(lib); }
  void* lib;
  void (*reset)();
  int (*set_device)(int);
};

TEST(CudaDriverTest, ADriverThatIsNotLoadedIsNotLoadedByTheProbe) {
  const char* absent = "libforkfeed-no-such-cuda.so.1";
  const CudaUse use = probe_cuda(absent);
  EXPECT_FALSE(use.loaded);
  EXPECT_TRUE(use.active_devices.empty());
  EXPECT_EQ(use.problem, "");
  EXPECT_FALSE(has_primary_context(absent, 0));
  EXPECT_EQ(::dlopen(absent, RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST(CudaDriverTest, TheProbeSeesExactlyTheDevicesWithAPrimaryContext) {
  const FakeDriver fake;
  CudaUse use = probe_cuda(FAKE_CUDART);
  EXPECT_TRUE(use.loaded);
  EXPECT_TRUE(use.active_devices.empty()) << "the probe itself made a context";
  EXPECT_FALSE(has_primary_context(FAKE_CUDART, 0));
  EXPECT_FALSE(has_primary_context(FAKE_CUDART, 1));

  ASSERT_EQ(fake.set_device(1), 0);  // the trainer uses device 1
  use = probe_cuda(FAKE_CUDART);
  EXPECT_EQ(use.active_devices, std::vector<int>{1});
  EXPECT_EQ(use.problem, "");
  EXPECT_FALSE(has_primary_context(FAKE_CUDART, 0));
  EXPECT_TRUE(has_primary_context(FAKE_CUDART, 1));
  EXPECT_FALSE(has_primary_context(FAKE_CUDART, 7)) << "a device that does not exist";
}

}  // namespace
}  // namespace forkfeed
