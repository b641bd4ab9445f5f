// _forkfeed.Client: forkfeed::Client, a stream on forkfeedd, through PyPass, plus what
// only a Client has.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "forkfeed/client.h"
#include "python/src/bindings.h"
#include "python/src/pass_binding.h"

namespace forkfeed::python {
namespace {

class PyClient : public PyPass<Client> {
 public:
  PyClient(const py::dict& options, const std::optional<std::string>& socket,
           const std::optional<std::string>& dataset, std::optional<double> connect_timeout,
           const std::optional<std::string>& state, const std::optional<std::string>& address,
           const std::optional<std::string>& token_file)
      : PyPass(connect(stream_options(options, dataset, connect_timeout), socket, address, token_file, state),
               "client") {}

  std::uint64_t classes() {
    return locked([](Client& c) { return c.classes(); });
  }
  std::vector<py::bytes> class_names() {
    const std::vector<std::string> names = locked([](Client& c) { return c.class_names(); });
    return {names.begin(), names.end()};
  }
  std::uint64_t dataset_size() {
    return locked([](Client& c) { return c.dataset_size(); });
  }
  std::uint32_t workers() {
    return locked([](Client& c) { return c.workers(); });
  }
  py::dict stats() {
    Result<LoaderStats> s = locked([](Client& c) { return c.stats(); });
    if (!s.ok()) raise(s.status());
    return stats_dict(*s);
  }

 private:
  static StreamOptions stream_options(const py::dict& options, const std::optional<std::string>& dataset,
                                      std::optional<double> connect_timeout) {
    StreamOptions o;
    o.loader = loader_options_from_dict(options);
    o.dataset = dataset.value_or("");
    if (connect_timeout) {
      const double seconds = *connect_timeout;
      if (!(seconds > 0 && seconds <= 86400)) {
        raise(Status::InvalidArgument("connect_timeout must be a number of seconds in (0, 86400], got " +
                                      py::repr(py::float_(seconds)).cast<std::string>()));
      }
      o.connect_timeout = std::chrono::milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
    }
    return o;
  }

  static std::unique_ptr<Client> connect(const StreamOptions& o, const std::optional<std::string>& socket,
                                         const std::optional<std::string>& address,
                                         const std::optional<std::string>& token_file,
                                         const std::optional<std::string>& state) {
    if (socket && address) {
      raise(Status::InvalidArgument("give socket (a local forkfeedd) or address (a remote one), not both"));
    }
    const std::string path = socket.value_or(default_socket_path());
    Result<std::unique_ptr<Client>> connected = Status::Internal("not connected");
    {
      py::gil_scoped_release nogil;
      connected = address ? Client::connect(RemoteDaemon{*address, token_file.value_or("")}, o, state.value_or(""))
                          : Client::connect(path, o, state.value_or(""));
    }
    if (!connected.ok()) raise(connected.status());
    return std::move(connected).value();
  }
};

}  // namespace

void register_client(py::module_& m) {
  py::class_<PyClient> c(m, "Client", "forkfeed::Client; forkfeed.Client wraps it.");
  c.def(py::init<const py::dict&, const std::optional<std::string>&, const std::optional<std::string>&,
                 std::optional<double>, const std::optional<std::string>&, const std::optional<std::string>&,
                 const std::optional<std::string>&>(),
        py::arg("options"), py::arg("socket") = py::none(), py::arg("dataset") = py::none(),
        py::arg("connect_timeout") = py::none(), py::arg("state") = py::none(), py::arg("address") = py::none(),
        py::arg("token_file") = py::none(),
        "Opens a stream on the forkfeedd at `socket` (default_socket_path() if None) from a "
        "dict of LoaderOptions names, or of the config's `dataset`; or, with `address` (HOST:PORT), on a "
        "remote forkfeedd over UCX, presenting the token in `token_file`; resumes from `state` if given.");
  def_pass(c);
  c.def("classes", &PyClient::classes, "Number of ImageFolder classes; 0 for a manifest.")
      .def("class_names", &PyClient::class_names,
           "Class names by label, as bytes, if forkfeedd sent them (it does when they fit in its reply).")
      .def("dataset_size", &PyClient::dataset_size, "Samples in the whole dataset.")
      .def("workers", &PyClient::workers, "Workers forkfeedd runs for this stream.")
      .def("stats", &PyClient::stats, "The stream's LoaderStats, asked from forkfeedd, as a dict.");
  m.def("default_socket_path", &default_socket_path,
        "Where forkfeedd listens unless told otherwise: $XDG_RUNTIME_DIR/forkfeed.sock, else "
        "/tmp/forkfeed-<uid>.sock.");
}

}  // namespace forkfeed::python
