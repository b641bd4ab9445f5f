// _forkfeed.Loader: forkfeed::Loader through PyPass, plus what only a Loader has.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "forkfeed/loader.h"
#include "python/src/bindings.h"
#include "python/src/pass_binding.h"

namespace forkfeed::python {
namespace {

class PyLoader : public PyPass<Loader> {
 public:
  PyLoader(const py::dict& options, const std::optional<std::string>& state)
      : PyPass(open(loader_options_from_dict(options), state), "loader") {}

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
  static std::unique_ptr<Loader> open(const LoaderOptions& o, const std::optional<std::string>& state) {
    Result<std::unique_ptr<Loader>> opened = Status::Internal("not opened");
    {
      py::gil_scoped_release nogil;
      opened = state ? Loader::open(o, *state) : Loader::open(o);
    }
    if (!opened.ok()) raise(opened.status());
    return std::move(opened).value();
  }
};

}  // namespace

void register_loader(py::module_& m) {
  py::class_<PyLoader> c(m, "Loader", "forkfeed::Loader; forkfeed.Loader wraps it.");
  c.def(py::init<const py::dict&, const std::optional<std::string>&>(), py::arg("options"),
        py::arg("state") = py::none(),
        "Opens a loader from a dict of LoaderOptions names, resuming from `state` if given.");
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
}

}  // namespace forkfeed::python
