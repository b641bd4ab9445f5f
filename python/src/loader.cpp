// _forkfeed.Loader: forkfeed::Loader through PyPass, plus what only a Loader has; and
// _forkfeed.WorkerPool, the workers several Loaders may share.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "forkfeed/loader.h"
#include "python/src/bindings.h"
#include "python/src/pass_binding.h"
#include "transforms/op_table.h"

namespace forkfeed::python {
namespace {

class PyLoader : public PyPass<Loader> {
 public:
  PyLoader(const py::dict& options, const std::optional<std::string>& state, std::shared_ptr<WorkerPool> pool)
      : PyPass(open(loader_options_from_dict(options), state, std::move(pool)), "loader") {}

  // As bytes: a folder name need not be UTF-8 (the package decodes them as os.fsdecode).
  std::vector<py::bytes> classes() {
    const std::vector<std::string> names = locked([](Loader& l) { return l.dataset().classes(); });
    return {names.begin(), names.end()};
  }
  std::size_t dataset_size() {
    return locked([](Loader& l) { return l.dataset().size(); });
  }
  py::dict stats() {
    return stats_dict(locked([](Loader& l) { return l.stats(); }));
  }

  // (address, size) of the shared memory every batch lies in, while the loader is open.
  std::pair<std::uintptr_t, std::size_t> shared_memory() {
    const Loader::SharedMemory m = locked([](Loader& l) { return l.shared_memory(); });
    return {reinterpret_cast<std::uintptr_t>(m.base), m.size};
  }

 private:
  static std::unique_ptr<Loader> open(const LoaderOptions& o, const std::optional<std::string>& state,
                                      std::shared_ptr<WorkerPool> pool) {
    Result<std::unique_ptr<Loader>> opened = Status::Internal("not opened");
    {
      py::gil_scoped_release nogil;
      opened = Loader::open(o, state.value_or(""), std::move(pool));
    }
    if (!opened.ok()) raise(opened.status());
    return std::move(opened).value();
  }
};

std::shared_ptr<WorkerPool> open_pool(std::uint32_t workers, const std::string& start_method,
                                      const std::string& fork_hazard, const std::string& log_level) {
  PoolOptions o{.workers = workers, .log_level = log_level};
  const auto method = parse_start_method(start_method);
  if (!method)
    raise(
        Status::InvalidArgument("start_method must be one of auto, fork, spawn, got '" + start_method + "'"));
  const auto hazard = parse_fork_hazard(fork_hazard);
  if (!hazard)
    raise(
        Status::InvalidArgument("fork_hazard must be one of warn, error, ignore, got '" + fork_hazard + "'"));
  o.start_method = *method;
  o.fork_hazard = *hazard;
  Result<std::shared_ptr<WorkerPool>> opened = Status::Internal("not opened");
  {
    py::gil_scoped_release nogil;
    opened = WorkerPool::open(o);
  }
  if (!opened.ok()) raise(opened.status());
  return std::move(opened).value();
}

}  // namespace

void register_loader(py::module_& m) {
  py::class_<WorkerPool, std::shared_ptr<WorkerPool>>(m, "WorkerPool",
                                                      "forkfeed::WorkerPool; forkfeed.WorkerPool wraps it.")
      .def(py::init(&open_pool), py::arg("workers"), py::arg("start_method"), py::arg("fork_hazard"),
           py::arg("log_level"), "Starts `workers` decode workers (0: the CPU count).")
      .def_property_readonly("workers", &WorkerPool::workers)
      .def_property_readonly("start_method",
                             [](const WorkerPool& p) { return std::string(to_string(p.start_method())); })
      .def_property_readonly("loaders", &WorkerPool::loaders);
  py::class_<PyLoader> c(m, "Loader", "forkfeed::Loader; forkfeed.Loader wraps it.");
  c.def(py::init<const py::dict&, const std::optional<std::string>&, std::shared_ptr<WorkerPool>>(),
        py::arg("options"), py::arg("state") = py::none(), py::arg("pool") = nullptr,
        "Opens a loader from a dict of LoaderOptions names, resuming from `state` if given, on `pool` if "
        "given.");
  def_pass(c);
  c.def("classes", &PyLoader::classes, "ImageFolder class names by label, as bytes; empty for a manifest.")
      .def("dataset_size", &PyLoader::dataset_size, "Samples in the whole dataset.")
      .def("stats", &PyLoader::stats, "LoaderStats as a dict.")
      .def("shared_memory", &PyLoader::shared_memory,
           "(address, size) of the shared memory arena every batch lies in.");
  m.def(
      "stat_names",
      [] {
        std::vector<std::string> names;
        LoaderStats stats;
        for_each_stat(stats, [&](const char* key, const auto&) { names.emplace_back(key); });
        return names;
      },
      "The keys of Loader.stats() and Client.stats(), in order (loader/stats_fields.h).");
  m.def("option_keywords", &option_keywords,
        "The LoaderOptions keywords of Loader() and Client(), in order (plan/option_fields.h).");
  m.def("op_names", &op_names,
        "The names of the transform ops in the C++ op table, in its order (transforms/op_table.h).");
}

}  // namespace forkfeed::python
