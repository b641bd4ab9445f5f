// Zero-copy views of a Batch: torch tensors through DLPack, or numpy arrays with an owner.
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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "python/src/bindings.h"
#include "python/src/dlpack.h"

namespace forkfeed::python {
namespace {

using Owner = std::shared_ptr<const Batch>;
using Shape = std::span<const std::int64_t>;

// A batch dimension and a field's sample shape (transport/slot_fields.h: kMaxFieldRank).
constexpr std::size_t kMaxDims = 8;

// One DLManagedTensor and what it points at; freed by its deleter.
struct DLPackView {
  dlpack::DLManagedTensor managed{};
  Owner owner;
  std::array<std::int64_t, kMaxDims> shape{};
  std::array<std::int64_t, kMaxDims> strides{};
};

void delete_view(dlpack::DLManagedTensor* self) { delete static_cast<DLPackView*>(self->manager_ctx); }

constexpr const char* kCapsuleName = "dltensor";  // "used_dltensor" once a consumer took it

void delete_unused_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsuleName) == 0) return;  // consumed: the consumer owns it now
  auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  managed->deleter(managed);
}

py::object dlpack_capsule(const Owner& owner, const void* data, dlpack::DLDataType dtype, Shape shape) {
  auto view = std::make_unique<DLPackView>();
  view->owner = owner;
  const std::size_t rank = shape.size();
  std::int64_t step = 1;  // row-major strides, in elements
  for (std::size_t i = rank; i-- > 0;) {
    view->shape[i] = shape[i];
    view->strides[i] = step;
    step *= shape[i];
  }
  dlpack::DLTensor& t = view->managed.dl_tensor;
  t.data = const_cast<void*>(data);  // the slot is writable memory; Batch only promises const
  t.device = {dlpack::kDLCPU, 0};
  t.ndim = static_cast<std::int32_t>(rank);
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

dlpack::DLDataType dlpack_type(ElementType element) {
  const auto bits = static_cast<std::uint8_t>(8 * element_bytes(element));
  switch (element) {
    case ElementType::kInt8:
    case ElementType::kInt16:
    case ElementType::kInt32:
    case ElementType::kInt64: return {dlpack::kDLInt, bits, 1};
    case ElementType::kFloat16:
    case ElementType::kFloat32:
    case ElementType::kFloat64: return {dlpack::kDLFloat, bits, 1};
    default: return {dlpack::kDLUInt, bits, 1};
  }
}

// The arrays of one batch, each a view of its memory that holds the batch alive.
class Arrays {
 public:
  Arrays(Batch batch, ArrayOutput output)
      : owner_(std::make_shared<const Batch>(std::move(batch))), output_(output) {
    if (output_ == ArrayOutput::kTorch) {
      torch_ = py::module_::import("torch");
      from_dlpack_ = py::module_::import("torch.utils.dlpack").attr("from_dlpack");
    }
  }

  const Batch& batch() const { return *owner_; }

  // The row-major `shape` array of `element`s at `data`; `name` is its field's.
  py::object operator()(const void* data, ElementType element, Shape shape, std::string_view name) const {
    if (output_ == ArrayOutput::kNumpy) return numpy_array(data, element, shape);
    switch (element) {
      case ElementType::kBool:  // torch 1.13 takes no bool through DLPack: its bytes, seen as bool
        return tensor(data, ElementType::kUint8, shape).attr("view")(torch_.attr("bool"));
      case ElementType::kUint16:  // torch 1.13 has no unsigned type wider than 8 bits: widened, a copy
        return torch_.attr("from_numpy")(numpy_array(data, element, shape).attr("astype")("int32"));
      case ElementType::kUint32:
        return torch_.attr("from_numpy")(numpy_array(data, element, shape).attr("astype")("int64"));
      case ElementType::kUint64:
        raise(Status::InvalidArgument("field '" + std::string(name) +
                                      "' holds uint64 values, which torch has no type for: open the "
                                      "loader with output=\"numpy\", or store the array as int64"));
      default: return tensor(data, element, shape);
    }
  }

 private:
  py::object tensor(const void* data, ElementType element, Shape shape) const {
    return from_dlpack_(dlpack_capsule(owner_, data, dlpack_type(element), shape));
  }

  py::object numpy_array(const void* data, ElementType element, Shape shape) const {
    return py::array(py::dtype(std::string(to_string(element))),
                     std::vector<py::ssize_t>(shape.begin(), shape.end()), data, owner_capsule(owner_));
  }

  Owner owner_;
  ArrayOutput output_;
  py::module_ torch_;       // kTorch only
  py::object from_dlpack_;  // kTorch only
};

// [n, *sample] as one shape.
std::vector<std::int64_t> batch_shape(std::size_t n, Shape sample) {
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(n)};
  shape.insert(shape.end(), sample.begin(), sample.end());
  return shape;
}

// A field's value, as field_views() says.
py::object field_value(const Arrays& arrays, const FieldView& f) {
  const std::size_t n = f.size();
  if (f.kind() == FieldKind::kText || f.kind() == FieldKind::kBytes) {
    py::list values(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view v = f.text(i);
      if (f.kind() == FieldKind::kBytes) {
        values[i] = py::bytes(v.data(), v.size());
        continue;
      }
      PyObject* s = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "surrogateescape");
      if (s == nullptr) throw py::error_already_set();
      values[i] = py::reinterpret_steal<py::str>(s);
    }
    return values;
  }
  if (!f.ragged()) return arrays(f.data(), f.element(), batch_shape(n, f.sample_shape()), f.name());
  // An array whose shape varies: one per sample, of the shape its worker wrote: () for a 0-d
  // array, and an empty one ([0], or [0, 4] for boxes) where the sample lacks the field.
  py::list values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = arrays(f.bytes(i).data(), f.element(i), f.shape(i), f.name());
  return values;
}

}  // namespace

ImageViews image_views(Batch batch, ArrayOutput output) {
  const Arrays arrays(std::move(batch), output);
  const Batch& b = arrays.batch();
  const ElementType pixels = b.dtype() == DType::kUint8 ? ElementType::kUint8 : ElementType::kFloat32;
  const std::array<std::int64_t, 1> n{static_cast<std::int64_t>(b.size())};
  return {arrays(b.data(), pixels, b.shape(), "images"),
          arrays(b.labels().data(), ElementType::kInt64, n, "labels")};
}

py::dict field_views(Batch batch, ArrayOutput output, bool presence) {
  const Arrays arrays(std::move(batch), output);
  const Batch& b = arrays.batch();
  const std::array<std::int64_t, 1> n{static_cast<std::int64_t>(b.size())};
  py::dict views;
  py::dict present;
  for (const FieldView& f : b.fields()) {
    const py::str name(f.name().data(), f.name().size());
    views[name] = field_value(arrays, f);
    if (presence) present[name] = arrays(f.present_flags().data(), ElementType::kBool, n, f.name());
  }
  if (presence) views["__present__"] = std::move(present);
  return views;
}

}  // namespace forkfeed::python
