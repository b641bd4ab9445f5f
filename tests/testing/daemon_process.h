// Helpers for the forkfeedd tests: a daemon run as a child of the test, on a socket of
// its own (tests run in parallel), and reading batches through a Client.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "forkfeed/client.h"
#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed::testing {

class DaemonProcess {
 public:
  // Spawns FORKFEED_BIN_DIR/forkfeedd --socket `socket` `args...` (log level warn, unless
  // `args` give --log-level).
  // Waits until it accepts connections, unless `wait` is false.
  DaemonProcess(const std::string& socket, const std::vector<std::string>& args = {}, bool wait = true);
  // SIGKILLs and reaps the daemon if it still runs.
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& socket() const { return socket_; }
  // True once a connection to the socket succeeds, within `timeout`.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Sends `signal` and waits up to `timeout` for the exit; the wait status, or nullopt.
  std::optional<int> signal_and_wait(int signal, std::chrono::milliseconds timeout);
  // Waits up to `timeout` for the daemon to exit by itself; the wait status, or nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

 private:
  std::string socket_;
  pid_t pid_ = -1;
};

// Base of the forkfeedd suites (CRTP, so that each suite has its own): an image folder
// in a temp dir, made once per suite by make_dataset() from the suite's SetUpTestSuite()
// and removed after its last test.
template <typename Suite>
class DaemonSuite : public ::testing::Test {
 protected:
  // make_image_folder() into a fresh temp dir; its root in root_.
  static void make_dataset(std::uint32_t images, std::uint32_t classes, std::uint64_t seed,
                           std::uint32_t min_side, std::uint32_t max_side) {
    dir_ = new TempDir();
    root_ = make_image_folder(dir_->path(), images, classes, seed, min_side, max_side);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  // Options for a stream of the dataset: `workers`, `batch_size`, 16 px, log level error.
  static LoaderOptions stream_options(std::uint32_t workers, std::uint32_t batch_size) {
    return small_options(root_, workers, batch_size);
  }
  // A socket path `name`.sock in the suite's temp dir.
  static std::string socket_path(const std::string& name) { return dir_->path() + "/" + name + ".sock"; }

  static inline TempDir* dir_ = nullptr;
  static inline std::string root_;
};

// A raw connection to the Unix socket `socket`, speaking nothing yet; invalid if the
// connect failed.
UniqueFd connect_unix(const std::string& socket);
// True if a connection to `socket` succeeds now.
bool connectable(const std::string& socket);

// Reads the rest of the current pass through next(). Fails the test at an error.
Batches read_pass(Client& client, std::size_t max_batches = 1000);
// Reads `count` batches through next(), crossing epoch ends. Fails the test at an error.
Batches read_batches(Client& client, std::size_t count);

// The daemon's (or the stream's) stats through the socket `socket`; null if it cannot
// be asked.
nlohmann::json daemon_stats(const std::string& socket);
// Where the daemon's gateway listens (its first --listen, port resolved); empty if it
// does not.
std::string remote_address(const DaemonProcess& daemon);
// The daemon's child that runs forkfeed-gateway, or -1.
pid_t gateway_of(pid_t daemon);

// Lines of /proc/<pid>/maps that map a memfd named `name` ("forkfeed-arena", ...).
int memfd_mappings(pid_t pid, const std::string& name);

}  // namespace forkfeed::testing
