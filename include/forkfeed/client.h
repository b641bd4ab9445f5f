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
// handshake; for a local forkfeedd not for the stream to open (a large dataset may take
// longer to index), for a remote one for that too (its gateway answers even when its
// forkfeedd is hung: a stream not open in time is taken for a hung node).
inline constexpr std::chrono::milliseconds kDefaultConnectTimeout = std::chrono::seconds(10);

// How long a remote daemon may hold batches without delivering one before they are
// asked of the others (StreamOptions::overdue).
inline constexpr std::chrono::milliseconds kDefaultOverdue = std::chrono::seconds(2);

// What a stream reads and how. The stream shares the daemon's one pool of workers:
// loader.workers only caps how many it keeps busy at once (within the daemon's
// max_stream_workers and pool size); its batch slots are loader.workers x prefetch + 1, as
// a Loader's; start_method and log_level are the daemon's, and a weight other than 1 is
// refused (forkfeedd's streams share its workers equally). Relative paths are taken from
// this process's working directory.
struct StreamOptions {
  LoaderOptions loader;
  // A dataset named in forkfeedd's config, instead of loader.image_folder / manifest.
  std::string dataset;
  // connect() fails with an error saying so when the daemon does not answer in time.
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;
  // Remote daemons only: one that holds batches of the pass and delivered none for this
  // long is overdue — a hung node — and its batches are asked of the other daemons too
  // (the first copy is kept). With one daemon, nothing else to ask. Only time spent
  // waiting in next() counts: a training step longer than this makes no daemon overdue.
  std::chrono::milliseconds overdue = kDefaultOverdue;
};

// A forkfeedd on another machine: where it listens for remote clients (its --listen) and
// the file holding the token it was started with (its --token-file; empty:
// $FORKFEED_TOKEN_FILE).
struct RemoteDaemon {
  std::string address;  // HOST:PORT
  std::string token_file;
};

// What one remote daemon of a Client did for it (Client::daemons()).
struct RemoteDaemonStats {
  std::string address;
  bool up = false;               // connected now
  bool stalled = false;          // overdue: its batches are asked of the others too
  std::uint64_t batches = 0;     // first copies it delivered (samples skipped whole included)
  std::uint64_t bytes = 0;       // of their pixels
  std::uint64_t wait_ns = 0;     // from asking for a batch to its arrival, summed over batches
                                 // (time spent waiting in next() only, as overdue counts it)
  std::uint64_t reassigned = 0;  // its batches asked of the others when it was lost or overdue
  std::uint64_t duplicates = 0;  // copies it delivered after another daemon's (dropped)
  std::uint64_t losses = 0;      // times the connection to it was lost
  std::string last_error;        // why it was last lost; empty if never
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
  // Everything else is as the local connect()'s, but connect_timeout bounds the stream's
  // opening too; a lost daemon or network fails the next call after 3 s of silence
  // (counted while next() waits: a process stopped in it, or between two calls, is not
  // told its daemon is lost). Loads UCX into this process: Loaders opened here afterwards
  // spawn their workers (start_method auto); the children it forks cannot use UCX, and
  // their connect() fails at once saying so.
  static Result<std::unique_ptr<Client>> connect(const RemoteDaemon& daemon, const StreamOptions& options,
                                                 std::string_view state = {});
  // One rank's stream drawn from several remote daemons at once (a fan-in), each serving
  // the same named dataset: every batch of the pass is asked of one daemon, the next one
  // going to whichever has a free receive slot (so each makes batches at its own speed),
  // and they are handed out in the pass's order — the stream, state() and resume are
  // exactly one daemon's, or a Loader's. A daemon that dies or cannot be reached loses
  // nothing: its batches are asked of the others (logged with its address), and it is
  // tried again now and then, rejoining at a batch boundary; one overdue has its batches
  // asked of the others too. Only when every daemon is lost does a call fail. A daemon
  // that refuses (token, dataset) fails connect(); one unreachable, or not open within
  // connect_timeout (a hung node), is left out and tried again, as long as one other
  // connects. All are opened at once: a hung one holds the others up for connect_timeout
  // at most.
  static Result<std::unique_ptr<Client>> connect(const std::vector<RemoteDaemon>& daemons,
                                                 const StreamOptions& options, std::string_view state = {});
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
  // Workers the daemon keeps busy for this stream at most: loader.workers, capped by the
  // daemon (its slots follow loader.workers all the same).
  std::uint32_t workers() const;
  // Classes of the dataset: its ImageFolder's class folders; 0 for a manifest.
  std::uint64_t classes() const;
  // Their names by label, as Loader::dataset().classes() has them, when forkfeedd sent
  // them: it does when they take at most 48 KiB (ImageNet's take 10); else empty while
  // classes() is not 0.
  const std::vector<std::string>& class_names() const;
  // The stream's loader stats, asked from the daemon (from every remote daemon, summed).
  Result<LoaderStats> stats();
  // A remote Client's daemons, in the order given (those added after); empty for a local one.
  std::vector<RemoteDaemonStats> daemons() const;
  // Adds a remote daemon to a remote Client: it connects and joins the pass at once
  // (this call waits up to connect_timeout). If it cannot join, the error says why and it
  // is not added: InvalidArgument for a local Client, a bad address or one given already;
  // Unavailable (or IoError) when it cannot be reached or does not open in time; its
  // refusal (token, dataset, other files).
  Status add_daemon(const RemoteDaemon& daemon);

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
