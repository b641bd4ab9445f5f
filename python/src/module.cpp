// The _forkfeed extension module: the C++ Loader and Client for the forkfeed package (__init__.py),
// which adds the Python-side defaults and turns DLPack capsules into torch tensors.
#include "python/src/bindings.h"

PYBIND11_MODULE(_forkfeed, m) {
  m.doc() = "forkfeed's C++ Loader and Client; use the forkfeed package, which wraps them.";
  forkfeed::python::register_errors(m);
  forkfeed::python::register_loader(m);
  forkfeed::python::register_client(m);
  forkfeed::python::register_fork_report(m);
}
