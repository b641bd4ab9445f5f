// forkfeed.fork_report(): ForkSafety::assess() as a dict, for a trainer that wants to
// know why "auto" spawns.
#include <pybind11/stl.h>

#include "forkfeed/fork_safety.h"
#include "python/src/bindings.h"

namespace forkfeed::python {

void register_fork_report(py::module_& m) {
  m.def(
      "fork_report",
      [] {
        const ForkReport r = ForkSafety::assess();
        py::dict d;
        d["hazardous"] = r.hazardous();
        d["summary"] = r.summary();
        d["description"] = r.describe();
        d["threads"] = r.threads;
        d["rdma_fork_mode"] = std::string(to_string(r.rdma_fork_mode));
        d["rdma_fork_env"] = r.rdma_fork_env;
        d["rdma_devices_open"] = r.rdma_devices_open;
        d["rdma_marked"] = r.rdma_marked;
        d["cuda_loaded"] = r.cuda_loaded;
        d["ucx_loaded"] = r.ucx_loaded;
        d["cuda_active_devices"] = r.cuda_active_devices;
        d["unchecked"] = r.unchecked;
        return d;
      },
      "Whether forking this process now is safe (RDMA, CUDA, threads), as forkfeed's "
      "C++ ForkSafety sees it: 'hazardous', a one-line 'summary', a 'description' for "
      "users, and what was found. start_method='auto' spawns workers when hazardous.");
}

}  // namespace forkfeed::python
