// What each source file of the _forkfeed extension adds to the module.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed::python {

namespace py = pybind11;

// errors.cpp: forkfeed.Error (a RuntimeError) and its subclasses BadDataError and
// WorkerDiedError, and DaemonLostError.
void register_errors(py::module_& m);
// Raises `status` as a Python exception: InvalidArgument -> ValueError, NotFound ->
// FileNotFoundError, IoError -> OSError, BadData -> BadDataError, WorkerDied ->
// WorkerDiedError, Unavailable -> DaemonLostError, anything else -> forkfeed.Error; the message is the C++
// one. REQUIRES: !status.ok() and the GIL held.
[[noreturn]] void raise(const Status& status);

// options.cpp: LoaderOptions from a dict of the C++ option names; a wrong type or value
// raises TypeError or ValueError naming the option, an unknown name raises TypeError.
LoaderOptions loader_options_from_dict(const py::dict& options);
// The Python keyword of LoaderOptions field `field` (a for_each_option name): the same
// name but for image_folder (root) and task_timeout_ms (task_timeout, in seconds).
std::string_view option_keyword(std::string_view field);
// Every option's keyword, in plan/option_fields.h's order: Loader()'s and Client()'s.
std::vector<std::string> option_keywords();

// loader.cpp: the Loader class the Python package wraps.
void register_loader(py::module_& m);

// client.cpp: the Client class the Python package wraps, and default_socket_path().
void register_client(py::module_& m);

// fork_report.cpp: fork_report(), ForkSafety::assess() as a dict.
void register_fork_report(py::module_& m);

}  // namespace forkfeed::python
