// Client: a Loader served by forkfeedd. A trainer that must not fork (RDMA, CUDA) opens
// a stream on the daemon, which runs the loader and its workers; batches are read in
// place from the daemon's shared memory, with the iterator, Batch, state() and reset
// semantics of Loader:
//
//   auto client = forkfeed::Client::connect(forkfeed::default_socket_path(), options).value_or_throw();
//   for (forkfeed::Batch& batch : *client) train(batch);   // one pass (epoch)
//
// If the daemon goes away, the next call fails with an error saying so (never a hang);
// connect again with the last state() to continue exactly.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/batch.h"
#include "forkfeed/loader.h"
#include "forkfeed/options.h"
#include "forkfeed/pass_iterator.h"
#include "forkfeed/status.h"

namespace forkfeed {

// $XDG_RUNTIME_DIR/forkfeed.sock, else /tmp/forkfeed-<uid>.sock: where forkfeedd listens
// unless told otherwise.
std::string default_socket_path();

// How long connecting waits for forkfeedd to take the connection and answer the
// handshake (not for the stream to open: a large dataset may take longer to index).
inline constexpr std::chrono::milliseconds kDefaultConnectTimeout = std::chrono::seconds(10);

// What a stream reads and how. The stream shares the daemon's one pool of workers:
// loader.workers only caps how many it keeps busy (its batch slots, within the daemon's
// max_stream_workers); start_method, weight and log_level are the daemon's. Relative paths are taken from this process's working directory.
struct StreamOptions {
  LoaderOptions loader;
  // A dataset named in forkfeedd's config, instead of loader.image_folder / manifest.
  std::string dataset;
  // connect() fails with an error saying so when the daemon does not answer in time.
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;
};

// A forkfeedd on another machine: where it listens for remote clients (its --listen) and
// the file holding the token it was started with (its --token-file; empty:
// $FORKFEED_TOKEN_FILE).
struct RemoteDaemon {
  std::string address;  // HOST:PORT
  std::string token_file;
};

class Client {
 public:
  // Connects to forkfeedd at `socket_path` and opens a stream; with `state` (a state()
  // from a Client or a Loader over the same dataset and order) it continues from there.
  static Result<std::unique_ptr<Client>> connect(const std::string& socket_path, const StreamOptions& options,
                                                 std::string_view state = {});
  static Result<std::unique_ptr<Client>> connect(const std::string& socket_path, const LoaderOptions& options,
                                                 std::string_view state = {});
  // Connects to a forkfeedd on another machine and opens a stream there. Requests go over
  // a TCP connection to `daemon.address`, batches over UCX (RDMA where the fabric has it,
  // else TCP; UCX_TLS and UCX_NET_DEVICES choose) into this process's own memory,
  // registered once. It serves only its named datasets: options.dataset names one.
  // Everything else is as the local connect()'s; a lost daemon or network fails the
  // next call within 3 s. Loads UCX into this process: Loaders opened here afterwards
  // spawn their workers (start_method auto).
  static Result<std::unique_ptr<Client>> connect(const RemoteDaemon& daemon, const StreamOptions& options,
                                                 std::string_view state = {});
  // Closes the stream: the daemon stops its workers. Batches still held stay readable
  // until they are destroyed.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // As Loader::next(). Also fails once the daemon is gone.
  Result<std::optional<Batch>> next();
  // As Loader::interrupt(): the next() that waits for the daemon, the one in progress or
  // a later one, returns Status::Code::kCancelled at once instead, leaving the pass (and
  // state()) as it was; a new pass forgets an interrupt no wait has taken.
  // Async-signal-safe, so that a SIGINT handler can end a wait on a stuck stream.
  void interrupt();

  // As Loader's. They talk to the daemon and so may fail; an error also comes back
  // from the next next().
  Status set_epoch(std::uint64_t epoch);
  Status reset();
  // As Loader's, computed here: still valid after the daemon died.
  std::string state() const;
  Status load_state(std::string_view state);

  // As Loader's: a Client belongs to the process that connected it. In the child of a
  // fork() its calls fail with FailedPrecondition, and destroying it there closes only
  // that process's fds and mappings: the parent's stream stays open.
  Status check_process() const;

  std::uint64_t epoch() const;
  std::uint64_t batches_per_epoch() const;
  std::uint64_t samples_per_epoch() const;
  // Samples in the whole dataset, all ranks together.
  std::uint64_t dataset_size() const;
  // Workers the daemon runs for this stream.
  std::uint32_t workers() const;
  // Classes of the dataset: its ImageFolder's class folders; 0 for a manifest.
  std::uint64_t classes() const;
  // Their names by label, as Loader::dataset().classes() has them, when forkfeedd sent
  // them: it does when they take at most 48 KiB (ImageNet's take 10); else empty while
  // classes() is not 0.
  const std::vector<std::string>& class_names() const;
  // The stream's loader stats, asked from the daemon.
  Result<LoaderStats> stats();

  // Range-for over one pass, as Loader's: begin() is a reset(). Errors are thrown as
  // forkfeed::Error.
  using Iterator = PassIterator<Client>;
  Iterator begin();
  PassEnd end() { return {}; }

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace forkfeed
