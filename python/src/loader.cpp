// _forkfeed.Loader: forkfeed::Loader with the GIL released wherever it may wait.
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "forkfeed/loader.h"
#include "python/src/batch_views.h"
#include "python/src/bindings.h"
#include "python/src/sigint.h"

namespace forkfeed::python {
namespace {

// The C++ Loader is used by one thread at a time: the mutex is taken with the GIL
// released, so a thread waiting for a batch holds up only others that use this loader.
// loader_ itself changes only with the GIL held (in close()).
class PyLoader {
 public:
  PyLoader(const py::dict& options, const std::optional<std::string>& state) {
    const LoaderOptions o = loader_options_from_dict(options);
    Result<std::unique_ptr<Loader>> opened = Status::Internal("not opened");
    {
      py::gil_scoped_release nogil;
      opened = state ? Loader::open(o, *state) : Loader::open(o);
    }
    if (!opened.ok()) raise(opened.status());
    loader_ = std::move(opened).value();
  }

  // Runs f(loader) under the mutex, with the GIL released; raises if closed. Defined
  // before its callers, which deduce its return type.
 private:
  template <typename F>
  auto locked(F&& f) {
    if (loader_ == nullptr) raise(Status::InvalidArgument("the loader is closed"));
    std::shared_ptr<Loader> loader = loader_;
    py::gil_scoped_release nogil;
    std::lock_guard lock(mu_);
    return f(*loader);
  }

 public:

  // (images, labels, sample_indices, epoch, index), or None once the pass is over.
  // Ctrl-C while waiting raises KeyboardInterrupt (see sigint.h).
  py::object next(bool numpy) {
    Result<std::optional<Batch>> next = wait_for_batch();
    if (!next.ok()) raise(next.status());
    if (!next->has_value()) return py::none();
    Batch batch = std::move(**next);
    py::list indices;
    for (std::uint64_t i : batch.sample_indices()) indices.append(i);
    const std::uint64_t epoch = batch.epoch();
    const std::uint64_t index = batch.index();
    BatchViews views = numpy ? numpy_views(std::move(batch)) : dlpack_views(std::move(batch));
    return py::make_tuple(views.images, views.labels, indices, epoch, index);
  }

  void set_epoch(std::uint64_t epoch) { locked([&](Loader& l) { l.set_epoch(epoch); }); }
  void reset() { locked([](Loader& l) { l.reset(); }); }
  std::string state() { return locked([](Loader& l) { return l.state(); }); }
  void load_state(const std::string& state) {
    const Status status = locked([&](Loader& l) { return l.load_state(state); });
    if (!status.ok()) raise(status);
  }
  std::uint64_t epoch() { return locked([](Loader& l) { return l.epoch(); }); }
  std::uint64_t batches_per_epoch() { return locked([](Loader& l) { return l.batches_per_epoch(); }); }
  std::uint64_t samples_per_epoch() { return locked([](Loader& l) { return l.samples_per_epoch(); }); }
  std::vector<std::string> classes() { return locked([](Loader& l) { return l.dataset().classes(); }); }
  std::size_t dataset_size() { return locked([](Loader& l) { return l.dataset().size(); }); }

  py::dict stats() {
    const LoaderStats s = locked([](Loader& l) { return l.stats(); });
    py::dict d;
    d["delivered_batches"] = s.delivered_batches;
    d["delivered_samples"] = s.delivered_samples;
    d["skipped_samples"] = s.skipped_samples;
    d["worker_restarts"] = s.worker_restarts;
    d["start_method"] = std::string(to_string(s.start_method));
    d["arena_bytes"] = s.arena_bytes;
    d["slots"] = s.slots;
    d["pinned"] = s.pinned;
    return d;
  }

  // (address, size) of the shared memory every batch lies in, while the loader is open.
  std::pair<std::uintptr_t, std::size_t> shared_memory() {
    const Loader::SharedMemory m = locked([](Loader& l) { return l.shared_memory(); });
    return {reinterpret_cast<std::uintptr_t>(m.base), m.size};
  }

  // Lets a next() waiting on another thread return an error at once.
  void interrupt() {
    if (loader_ != nullptr) loader_->interrupt();
  }

  // Stops and reaps the workers; batches still held stay valid. Idempotent.
  void close() {
    std::shared_ptr<Loader> doomed = std::move(loader_);
    py::gil_scoped_release nogil;
    {
      std::lock_guard lock(mu_);  // waits for a call in progress on another thread
    }
    doomed.reset();
  }

  bool closed() const { return loader_ == nullptr; }

 private:
  // Loader::next(), watching for SIGINT. Loader::interrupt() makes the next wait, in
  // this call or a later one, return kCancelled: one caused by our handler is retried
  // when Python's handler did not raise (a handler that ignores Ctrl-C).
  Result<std::optional<Batch>> wait_for_batch() {
    for (;;) {
      if (loader_ == nullptr) raise(Status::InvalidArgument("the loader is closed"));
      Result<std::optional<Batch>> next = Status::Internal("not run");
      bool fired = false;
      {
        SigintWatch watch(*loader_);
        next = locked([](Loader& l) { return l.next(); });
        fired = watch.fired();
      }
      if (fired && PyErr_CheckSignals() != 0) throw py::error_already_set();  // KeyboardInterrupt
      const bool interrupted = !next.ok() && next.status().code() == Status::Code::kCancelled;
      if (interrupted && (fired || pending_interrupt_)) {
        pending_interrupt_ = false;
        continue;
      }
      if (fired) pending_interrupt_ = true;  // set in the Loader, not yet consumed by a wait
      return next;
    }
  }

  bool pending_interrupt_ = false;
  std::mutex mu_;
  std::shared_ptr<Loader> loader_;
};

}  // namespace

void register_loader(py::module_& m) {
  py::class_<PyLoader>(m, "Loader", "forkfeed::Loader; forkfeed.Loader wraps it.")
      .def(py::init<const py::dict&, const std::optional<std::string>&>(), py::arg("options"),
           py::arg("state") = py::none(),
           "Opens a loader from a dict of LoaderOptions names, resuming from `state` if given.")
      .def("next", &PyLoader::next, py::arg("numpy"),
           "(images, labels, sample_indices, epoch, index) of the next batch, or None at the end "
           "of the pass. images and labels are DLPack capsules, or numpy arrays if `numpy`.")
      .def("set_epoch", &PyLoader::set_epoch, py::arg("epoch"), "Starts a new pass over `epoch`.")
      .def("reset", &PyLoader::reset, "Starts a fresh pass (see forkfeed::Loader::reset).")
      .def("state", &PyLoader::state, "Where the loader stands, as JSON.")
      .def("load_state", &PyLoader::load_state, py::arg("state"), "Resumes from a state() JSON.")
      .def("epoch", &PyLoader::epoch, "The epoch of the current pass.")
      .def("batches_per_epoch", &PyLoader::batches_per_epoch, "Batches in one pass of this rank.")
      .def("samples_per_epoch", &PyLoader::samples_per_epoch, "Samples in one pass of this rank.")
      .def("classes", &PyLoader::classes, "ImageFolder class names by label; empty for a manifest.")
      .def("dataset_size", &PyLoader::dataset_size, "Samples in the whole dataset.")
      .def("stats", &PyLoader::stats, "LoaderStats as a dict.")
      .def("shared_memory", &PyLoader::shared_memory,
           "(address, size) of the shared memory arena every batch lies in.")
      .def("interrupt", &PyLoader::interrupt, "Makes a waiting next() return an error at once.")
      .def("close", &PyLoader::close, "Stops the workers; batches still held stay valid.")
      .def_property_readonly("closed", &PyLoader::closed, "Whether close() was called.");
}

}  // namespace forkfeed::python
