// The DLPack ABI (https://github.com/dmlc/dlpack, v0.x, Apache-2.0): the few structs
// torch.utils.dlpack.from_dlpack reads from a "dltensor" capsule. Debian 12 packages no
// dlpack.h; these layouts have not changed since DLPack 0.2 and are what PyTorch 1.13 reads.
#pragma once

#include <cstdint>

namespace forkfeed::python::dlpack {

enum DeviceType : std::int32_t { kDLCPU = 1 };
enum TypeCode : std::uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2 };

struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};

struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements
  std::uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // namespace forkfeed::python::dlpack
