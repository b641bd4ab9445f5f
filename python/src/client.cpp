// _forkfeed.Client: forkfeed::Client, a stream on forkfeedd, through PyPass, plus what
// only a Client has.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "client/remote/daemon_stats_fields.h"
#include "forkfeed/client.h"
#include "python/src/bindings.h"
#include "python/src/pass_binding.h"

namespace forkfeed::python {
namespace {

class PyClient : public PyPass<Client> {
 public:
  PyClient(const py::dict& options, const std::optional<std::string>& socket,
           const std::optional<std::string>& dataset, std::optional<double> connect_timeout,
           const std::optional<std::string>& state, const py::object& address,
           const std::optional<std::string>& token_file, std::optional<double> overdue)
      : PyPass(connect(stream_options(options, dataset, connect_timeout, overdue), socket,
                       remote_daemons(address, token_file), state),
               "client"),
        token_file_(token_file.value_or("")) {}

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
  // Client::daemons(), each as a dict of RemoteDaemonStats' fields (client/remote/daemon_stats_fields.h;
  // and wait_s, wait_ns in seconds); empty for a local daemon.
  py::list daemons() {
    const std::vector<RemoteDaemonStats> all = locked([](Client& c) { return c.daemons(); });
    py::list out;
    for (const RemoteDaemonStats& d : all) {
      py::dict row;
      for_each_daemon_stat(d, [&](const char* key, const auto& value) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::string>) {
          row[key] = text(value);
        } else {
          row[key] = value;
        }
      });
      row["wait_s"] = static_cast<double>(d.wait_ns) / 1e9;
      out.append(std::move(row));
    }
    return out;
  }
  // Joins it at once (it waits, without the GIL, up to connect_timeout); its token_file
  // is the Client's unless given.
  void add_daemon(const std::string& address, const std::optional<std::string>& token_file) {
    const RemoteDaemon daemon{address, token_file.value_or(token_file_)};
    check(locked([&](Client& c) { return c.add_daemon(daemon); }));
  }

 private:
  std::string token_file_;  // the token_file the Client was opened with ("": $FORKFEED_TOKEN_FILE)

  // A message or address as str, whatever its bytes (a peer's error text may not be UTF-8).
  static py::str text(const std::string& s) {
    PyObject* decoded = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
    if (decoded == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(decoded);
  }

  // Seconds in (0, 86400] as milliseconds (at least 1); `name` names the keyword in the error.
  static std::chrono::milliseconds seconds_option(const char* name, double seconds) {
    if (!(seconds > 0 && seconds <= 86400)) {
      raise(Status::InvalidArgument(std::string(name) + " must be a number of seconds in (0, 86400], got " +
                                    py::repr(py::float_(seconds)).cast<std::string>()));
    }
    return std::chrono::milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
  }

  static StreamOptions stream_options(const py::dict& options, const std::optional<std::string>& dataset,
                                      std::optional<double> connect_timeout, std::optional<double> overdue) {
    StreamOptions o;
    o.loader = loader_options_from_dict(options);
    o.dataset = dataset.value_or("");
    if (connect_timeout) o.connect_timeout = seconds_option("connect_timeout", *connect_timeout);
    if (overdue) o.overdue = seconds_option("overdue", *overdue);
    return o;
  }

  // `address` as the remote daemons to draw from: None (a local forkfeedd) gives none;
  // "HOST:PORT" one; a list or tuple of them each (an empty one is refused by connect()).
  // Every one presents the token in `token_file`.
  static std::optional<std::vector<RemoteDaemon>> remote_daemons(
      const py::object& address, const std::optional<std::string>& token_file) {
    if (address.is_none()) return std::nullopt;
    const std::string token = token_file.value_or("");
    const auto one = [&](const py::handle& item, const std::string& name) {
      if (!py::isinstance<py::str>(item) && !py::isinstance<py::bytes>(item)) {
        throw py::type_error(name + " must be a str \"HOST:PORT\", got " +
                             py::repr(item).cast<std::string>() + " (" + Py_TYPE(item.ptr())->tp_name + ")");
      }
      return RemoteDaemon{item.cast<std::string>(), token};
    };
    if (py::isinstance<py::str>(address) || py::isinstance<py::bytes>(address)) {
      return std::vector<RemoteDaemon>{one(address, "address")};
    }
    if (!py::isinstance<py::list>(address) && !py::isinstance<py::tuple>(address)) {
      throw py::type_error("address must be a str \"HOST:PORT\" or a list of them, got " +
                           py::repr(address).cast<std::string>());
    }
    std::vector<RemoteDaemon> daemons;
    for (py::handle item : address) {
      daemons.push_back(one(item, "address[" + std::to_string(daemons.size()) + "]"));
    }
    return daemons;
  }

  static std::unique_ptr<Client> connect(const StreamOptions& o, const std::optional<std::string>& socket,
                                         const std::optional<std::vector<RemoteDaemon>>& remote,
                                         const std::optional<std::string>& state) {
    if (socket && remote) {
      raise(Status::InvalidArgument("give socket (a local forkfeedd) or address (a remote one), not both"));
    }
    const std::string path = socket.value_or(default_socket_path());
    Result<std::unique_ptr<Client>> connected = Status::Internal("not connected");
    {
      py::gil_scoped_release nogil;
      connected = remote ? Client::connect(*remote, o, state.value_or(""))
                         : Client::connect(path, o, state.value_or(""));
    }
    if (!connected.ok()) raise(connected.status());
    return std::move(connected).value();
  }
};

}  // namespace

void register_client(py::module_& m) {
  py::class_<PyClient> c(m, "Client", "forkfeed::Client; forkfeed.Client wraps it.");
  c.def(
      py::init<const py::dict&, const std::optional<std::string>&, const std::optional<std::string>&,
               std::optional<double>, const std::optional<std::string>&, const py::object&,
               const std::optional<std::string>&, std::optional<double>>(),
      py::arg("options"), py::arg("socket") = py::none(), py::arg("dataset") = py::none(),
      py::arg("connect_timeout") = py::none(), py::arg("state") = py::none(), py::arg("address") = py::none(),
      py::arg("token_file") = py::none(), py::arg("overdue") = py::none(),
      "Opens a stream on the forkfeedd at `socket` (default_socket_path() if None) from a "
      "dict of LoaderOptions names, or of the config's `dataset`; or, with `address` (HOST:PORT, or a list "
      "of them: one stream drawn from all, a fan-in), on remote forkfeedds over UCX, presenting the token in "
      "`token_file`, a daemon that holds batches `overdue` seconds having them asked of the others; resumes "
      "from `state` if given.");
  def_pass(c);
  c.def("classes", &PyClient::classes, "Number of ImageFolder classes; 0 for a manifest.")
      .def("class_names", &PyClient::class_names,
           "Class names by label, as bytes, if forkfeedd sent them (it does when they fit in its reply).")
      .def("dataset_size", &PyClient::dataset_size, "Samples in the whole dataset.")
      .def("workers", &PyClient::workers, "Workers forkfeedd runs for this stream.")
      .def("stats", &PyClient::stats, "The stream's LoaderStats, asked from forkfeedd, as a dict.")
      .def("daemons", &PyClient::daemons,
           "What each remote forkfeedd did for this stream (RemoteDaemonStats), as dicts; empty for a local "
           "one.")
      .def("add_daemon", &PyClient::add_daemon, py::arg("address"), py::arg("token_file") = py::none(),
           "Adds a remote forkfeedd (HOST:PORT) to a remote stream; it joins at the next batch boundary.");
  m.def("default_socket_path", &default_socket_path,
        "Where forkfeedd listens unless told otherwise: $XDG_RUNTIME_DIR/forkfeed.sock, else "
        "/tmp/forkfeed-<uid>.sock.");
}

}  // namespace forkfeed::python
