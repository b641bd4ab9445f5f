// forkfeed::Status as Python exceptions.
#include <Python.h>

#include "python/src/bindings.h"

namespace forkfeed::python {
namespace {

// Owned by the module for the life of the interpreter.
PyObject* error_type = nullptr;
PyObject* bad_data_type = nullptr;
PyObject* worker_died_type = nullptr;
PyObject* daemon_lost_type = nullptr;

PyObject* add_exception(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("forkfeed.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module takes a reference of its own
  return type;
}

}  // namespace

void register_errors(py::module_& m) {
  error_type = add_exception(m, "Error", PyExc_RuntimeError,
                             "A forkfeed failure that is not a bad argument or a missing file; "
                             "the message says what failed and what to do.");
  bad_data_type = add_exception(m, "BadDataError", error_type,
                                "A file could not be decoded, or a manifest is malformed; the "
                                "message names the file.");
  worker_died_type = add_exception(m, "WorkerDiedError", error_type,
                                   "A decode worker died and could not be replaced (past "
                                   "max_worker_restarts); recreate the Loader.");
  daemon_lost_type = add_exception(m, "DaemonLostError", error_type,
                                   "forkfeedd went away (stopped or crashed) under a Client; restart "
                                   "it, then make a new Client and load_state_dict() the last "
                                   "state_dict() to continue exactly.");
}

void raise(const Status& status) {
  PyObject* type = error_type;
  switch (status.code()) {
    case Status::Code::kInvalidArgument: type = PyExc_ValueError; break;
    case Status::Code::kNotFound: type = PyExc_FileNotFoundError; break;
    case Status::Code::kIoError: type = PyExc_OSError; break;
    case Status::Code::kBadData: type = bad_data_type; break;
    case Status::Code::kWorkerDied: type = worker_died_type; break;
    case Status::Code::kDeadlineExceeded: type = PyExc_TimeoutError; break;
    case Status::Code::kUnavailable: type = daemon_lost_type; break;
    case Status::Code::kOk:
    case Status::Code::kResourceExhausted:
    case Status::Code::kInternal:
    case Status::Code::kCancelled:
    case Status::Code::kFailedPrecondition: break;
  }
  // A message may quote a path that is not UTF-8: its bytes are shown, not refused.
  const std::string& m = status.message();
  PyObject* text = PyUnicode_DecodeUTF8(m.data(), static_cast<Py_ssize_t>(m.size()), "backslashreplace");
  if (text == nullptr) throw py::error_already_set();
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  throw py::error_already_set();
}

}  // namespace forkfeed::python
