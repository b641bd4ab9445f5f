// A forkfeed::Batch as Python objects that are views of its slot, with no copy: every
// array keeps one owner (the Batch) alive, and the slot goes back to the loader's pool
// when the last view that refers to it is freed.
#pragma once

#include <pybind11/pybind11.h>

#include "forkfeed/batch.h"

namespace forkfeed::python {

namespace py = pybind11;

// torch tensors (through DLPack, whose deleter drops the tensor's reference to the owner
// on whatever thread frees it, touching no Python), or numpy arrays whose base holds it.
enum class ArrayOutput { kTorch, kNumpy };

struct ImageViews {
  py::object images;  // uint8 NHWC or float32 NCHW
  py::object labels;  // int64 (N,)
};

// A batch without fields: its pixels and labels.
ImageViews image_views(Batch batch, ArrayOutput output);

// A batch with fields, as a dict by field name in the schema's order, "__key__" last:
//   image, label, number and fixed-shape array fields: one array [N, *sample shape];
//   arrays whose shape varies: a list of N arrays; text: a list of N str (keys that are
//   not UTF-8 with surrogate escapes, as os.fsdecode gives them); bytes: a list of N bytes.
// With `presence`, "__present__" maps each field to a bool array [N]: False where the
// sample lacked it (missing="empty").
// REQUIRES: !batch.fields().empty()
py::dict field_views(Batch batch, ArrayOutput output, bool presence);

}  // namespace forkfeed::python
