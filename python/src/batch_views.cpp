// Zero-copy views of a Batch: DLPack capsules (torch) or numpy arrays with an owner.
//
// DLPack rather than the array interface for torch: torch.from_numpy/as_tensor over
// __array_interface__ would need a numpy array in between whose base keeps the owner;
// from_dlpack hands torch the owner directly, and the deleter runs when the tensor's
// storage is freed, views included.
#include "python/src/batch_views.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "python/src/dlpack.h"

namespace forkfeed::python {
namespace {

using Owner = std::shared_ptr<const Batch>;

// One DLManagedTensor and what it points at; freed by its deleter.
struct DLPackView {
  dlpack::DLManagedTensor managed{};
  Owner owner;
  std::array<std::int64_t, 4> shape{};
  std::array<std::int64_t, 4> strides{};
};

void delete_view(dlpack::DLManagedTensor* self) { delete static_cast<DLPackView*>(self->manager_ctx); }

constexpr const char* kCapsuleName = "dltensor";  // "used_dltensor" once a consumer took it

void delete_unused_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsuleName) == 0) return;  // consumed: the consumer owns it now
  auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  managed->deleter(managed);
}

// Row-major strides, in elements.
template <std::size_t N>
std::array<std::int64_t, 4> row_major(const std::array<std::int64_t, N>& shape) {
  std::array<std::int64_t, 4> strides{};
  std::int64_t step = 1;
  for (std::size_t i = N; i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

template <std::size_t N>
py::object dlpack_capsule(const Owner& owner, const void* data, dlpack::DLDataType dtype,
                          const std::array<std::int64_t, N>& shape) {
  auto view = std::make_unique<DLPackView>();
  view->owner = owner;
  std::copy(shape.begin(), shape.end(), view->shape.begin());
  view->strides = row_major(shape);
  dlpack::DLTensor& t = view->managed.dl_tensor;
  t.data = const_cast<void*>(data);  // the slot is writable memory; Batch only promises const
  t.device = {dlpack::kDLCPU, 0};
  t.ndim = static_cast<std::int32_t>(N);
  t.dtype = dtype;
  t.shape = view->shape.data();
  t.strides = view->strides.data();
  t.byte_offset = 0;
  view->managed.manager_ctx = view.get();
  view->managed.deleter = &delete_view;
  PyObject* capsule = PyCapsule_New(&view->managed, kCapsuleName, &delete_unused_capsule);
  if (capsule == nullptr) throw py::error_already_set();
  view.release();  // the capsule, then its consumer, owns it
  return py::reinterpret_steal<py::object>(capsule);
}

py::capsule owner_capsule(const Owner& owner) {
  return py::capsule(new Owner(owner), [](void* p) { delete static_cast<Owner*>(p); });
}

}  // namespace

BatchViews dlpack_views(Batch batch) {
  const auto owner = std::make_shared<const Batch>(std::move(batch));
  const dlpack::DLDataType pixels = owner->dtype() == DType::kUint8
                                        ? dlpack::DLDataType{dlpack::kDLUInt, 8, 1}
                                        : dlpack::DLDataType{dlpack::kDLFloat, 32, 1};
  return {dlpack_capsule(owner, owner->data(), pixels, owner->shape()),
          dlpack_capsule(owner, owner->labels().data(), dlpack::DLDataType{dlpack::kDLInt, 64, 1},
                         std::array{static_cast<std::int64_t>(owner->size())})};
}

BatchViews numpy_views(Batch batch) {
  const auto owner = std::make_shared<const Batch>(std::move(batch));
  const auto shape = owner->shape();
  const std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array images = owner->dtype() == DType::kUint8
                         ? py::array(py::dtype::of<std::uint8_t>(), dims, owner->data(), owner_capsule(owner))
                         : py::array(py::dtype::of<float>(), dims, owner->data(), owner_capsule(owner));
  py::array labels(py::dtype::of<std::int64_t>(),
                   std::vector<py::ssize_t>{static_cast<py::ssize_t>(owner->size())}, owner->labels().data(),
                   owner_capsule(owner));
  return {std::move(images), std::move(labels)};
}

}  // namespace forkfeed::python
