// PinnedRegistration: page-locks a region of host memory for one CUDA device, so that
// batches can be copied to it asynchronously. CUDA is loaded at run time; without it the
// memory stays ordinary and the registration says why.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "base/owner_process.h"
#include "cuda/runtime.h"

namespace forkfeed {

class PinnedRegistration {
 public:
  // Registers |region| (cudaHostRegister) for |device|. Never fails: without a CUDA
  // runtime, without that device or on any CUDA error the result is not pinned() and
  // summary() says why. Device discipline: |device| is made current before the
  // registration (and before the unregistration), device 0 is never touched unless it
  // is |device|, and the caller's previous device is made current again afterwards only
  // if it has a primary context (see cuda/device_scope.h).
  // REQUIRES: device >= 0; |region| outlives the result.
  static PinnedRegistration pin(std::span<std::byte> region, int device,
                                const CudaLibraries& libraries = CudaLibraries::from_environment());

  PinnedRegistration(PinnedRegistration&& other) noexcept;
  PinnedRegistration& operator=(PinnedRegistration&& other) noexcept;
  PinnedRegistration(const PinnedRegistration&) = delete;
  PinnedRegistration& operator=(const PinnedRegistration&) = delete;
  // Unregisters on the calling thread, with the same device discipline; a failure is
  // logged (to the "forkfeed" logger), since a destructor cannot report it. In the
  // child of a fork() it calls nothing: the registration is the parent's.
  ~PinnedRegistration();

  // True iff the region is page-locked now.
  bool pinned() const { return runtime_ != nullptr; }
  int device() const { return device_; }
  // One line for the log: what was pinned, or why the memory stays ordinary.
  const std::string& summary() const { return summary_; }

 private:
  PinnedRegistration(std::unique_ptr<const CudaRuntime> runtime, std::span<std::byte> region, int device,
                     std::string summary);
  void release();

  std::unique_ptr<const CudaRuntime> runtime_;  // null: not pinned
  std::span<std::byte> region_;
  int device_ = -1;
  std::string summary_;
  OwnerProcess owner_;
};

}  // namespace forkfeed
