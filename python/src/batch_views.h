// A forkfeed::Batch as Python objects that are views of its slot, with no copy: the
// images and labels keep one owner (the Batch) alive, and the slot goes back to the
// loader's pool when the last view that refers to it is freed.
#pragma once

#include <pybind11/pybind11.h>

#include "forkfeed/batch.h"

namespace forkfeed::python {

namespace py = pybind11;

struct BatchViews {
  py::object images;  // uint8 NHWC or float32 NCHW
  py::object labels;  // int64 (N,)
};

// DLPack "dltensor" capsules, for torch.utils.dlpack.from_dlpack: each DLManagedTensor's
// deleter drops its reference to the owner, on whatever thread frees the tensor (no
// Python is touched there). A capsule never consumed frees its tensor itself.
BatchViews dlpack_views(Batch batch);
// numpy arrays whose base is a capsule holding the owner.
BatchViews numpy_views(Batch batch);

}  // namespace forkfeed::python
