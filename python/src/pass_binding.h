// PyPass<Source>: what _forkfeed.Loader and _forkfeed.Client share — a forkfeed::Loader
// or forkfeed::Client behind a mutex, with the GIL released wherever it may wait, Ctrl-C
// while waiting for a batch, and batches as zero-copy views. def_pass() binds it.
#pragma once

#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "forkfeed/loader.h"
#include "loader/stats_fields.h"
#include "python/src/batch_views.h"
#include "python/src/bindings.h"
#include "python/src/sigint.h"

namespace forkfeed::python {

// The Source is used by one thread at a time: the mutex is taken with the GIL released,
// so a thread waiting for a batch holds up only others that use this source. source_
// itself changes only with the GIL held (in close()). `kind` names it in errors.
template <typename Source>
class PyPass {
 public:
  PyPass(std::unique_ptr<Source> source, const char* kind) : source_(std::move(source)), kind_(kind) {}

  // (views, sample_indices, epoch, index), or None once the pass is over: views are
  // (images, labels), or a dict of the fields when the batch has fields (field_views;
  // `presence`: with "__present__"). Ctrl-C while waiting raises KeyboardInterrupt
  // (see sigint.h).
  py::object next(bool numpy, bool presence) {
    Result<std::optional<Batch>> next = wait_for_batch();
    if (!next.ok()) raise(next.status());
    if (!next->has_value()) return py::none();
    Batch batch = std::move(**next);
    py::list indices;
    for (std::uint64_t i : batch.sample_indices()) indices.append(i);
    const std::uint64_t epoch = batch.epoch();
    const std::uint64_t index = batch.index();
    const ArrayOutput output = numpy ? ArrayOutput::kNumpy : ArrayOutput::kTorch;
    if (!batch.fields().empty())
      return py::make_tuple(field_views(std::move(batch), output, presence), indices, epoch, index);
    ImageViews views = image_views(std::move(batch), output);
    return py::make_tuple(py::make_tuple(views.images, views.labels), indices, epoch, index);
  }

  void set_epoch(std::uint64_t epoch) {
    check(locked([&](Source& s) { return s.set_epoch(epoch); }));
  }
  void reset() {
    check(locked([](Source& s) { return s.reset(); }));
  }
  std::string state() {
    return locked([](Source& s) { return s.state(); });
  }
  void load_state(const std::string& state) {
    check(locked([&](Source& s) { return s.load_state(state); }));
  }
  std::uint64_t epoch() {
    return locked([](Source& s) { return s.epoch(); });
  }
  std::uint64_t batches_per_epoch() {
    return locked([](Source& s) { return s.batches_per_epoch(); });
  }
  std::uint64_t samples_per_epoch() {
    return locked([](Source& s) { return s.samples_per_epoch(); });
  }

  // Lets a next() waiting on another thread return an error at once.
  void interrupt() {
    if (source_ != nullptr) source_->interrupt();
  }

  // Destroys the source (stops the workers, or closes the stream); batches still held
  // stay valid. Idempotent. In the child of a fork() it lets go of the child's copy only
  // (the source itself sees to that), without the mutex: a thread of the parent may have
  // held it at the fork, and that thread does not exist here to let it go.
  void close() {
    std::shared_ptr<Source> doomed = std::move(source_);
    if (doomed != nullptr && !doomed->check_process().ok()) return;
    py::gil_scoped_release nogil;
    {
      std::lock_guard lock(mu_);  // waits for a call in progress on another thread
    }
    doomed.reset();
  }

  bool closed() const { return source_ == nullptr; }

 protected:
  // Runs f(source) under the mutex, with the GIL released; raises if closed.
  template <typename F>
  auto locked(F&& f) {
    std::shared_ptr<Source> source = open_source();
    py::gil_scoped_release nogil;
    std::lock_guard lock(mu_);
    return f(*source);
  }

  // LoaderStats as the dict Loader.stats() and Client.stats() return: the same keys.
  static py::dict stats_dict(const LoaderStats& s) {
    py::dict d;
    for_each_stat(s, [&](const char* key, const auto& value) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, StartMethod>) {
        d[key] = std::string(to_string(value));
      } else {
        d[key] = value;
      }
    });
    return d;
  }

  static void check(const Status& status) {
    if (!status.ok()) raise(status);
  }

 private:
  // The source, for a call: raises if it is closed or belongs to another process (a
  // fork's parent), before the mutex is taken.
  std::shared_ptr<Source> open_source() const {
    if (source_ == nullptr) raise(Status::InvalidArgument(std::string("the ") + kind_ + " is closed"));
    check(source_->check_process());
    return source_;
  }

  // Source::next(), watching for SIGINT. Source::interrupt() makes the next wait, in
  // this call or a later one, return kCancelled: one caused by our handler is retried
  // when Python's handler did not raise (a handler that ignores Ctrl-C).
  Result<std::optional<Batch>> wait_for_batch() {
    for (;;) {
      std::shared_ptr<Source> source = open_source();
      Result<std::optional<Batch>> next = Status::Internal("not run");
      bool fired = false;
      {
        SigintWatch watch(SigintWatch::target(*source));
        next = locked([](Source& s) { return s.next(); });
        fired = watch.fired();
      }
      if (fired && PyErr_CheckSignals() != 0) throw py::error_already_set();  // KeyboardInterrupt
      const bool interrupted = !next.ok() && next.status().code() == Status::Code::kCancelled;
      if (interrupted && (fired || pending_interrupt_)) {
        pending_interrupt_ = false;
        continue;
      }
      if (fired) pending_interrupt_ = true;  // set in the source, not yet consumed by a wait
      return next;
    }
  }

  bool pending_interrupt_ = false;
  std::mutex mu_;
  std::shared_ptr<Source> source_;
  const char* kind_;
};

// Binds the methods PyPass gives `Py` (a PyLoader or PyClient) to `c`.
template <typename Py>
void def_pass(py::class_<Py>& c) {
  c.def("next", &Py::next, py::arg("numpy"), py::arg("presence") = false,
        "(views, sample_indices, epoch, index) of the next batch, or None at the end of the pass. "
        "views: (images, labels), or a dict of the fields (with \"__present__\" if `presence`); "
        "arrays are torch tensors, or numpy arrays if `numpy`.")
      .def("set_epoch", &Py::set_epoch, py::arg("epoch"), "Starts a new pass over `epoch`.")
      .def("reset", &Py::reset, "Starts a fresh pass (see forkfeed::Loader::reset).")
      .def("state", &Py::state, "Where the pass stands, as JSON.")
      .def("load_state", &Py::load_state, py::arg("state"), "Resumes from a state() JSON.")
      .def("epoch", &Py::epoch, "The epoch of the current pass.")
      .def("batches_per_epoch", &Py::batches_per_epoch, "Batches in one pass of this rank.")
      .def("samples_per_epoch", &Py::samples_per_epoch, "Samples in one pass of this rank.")
      .def("interrupt", &Py::interrupt, "Makes a waiting next() return an error at once.")
      .def("close", &Py::close, "Stops the workers or closes the stream; batches still held stay valid.")
      .def_property_readonly("closed", &Py::closed, "Whether close() was called.");
}

}  // namespace forkfeed::python
