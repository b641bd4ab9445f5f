// Server: forkfeedd's main loop. It accepts connections on the Listener (checking each
// peer's uid), gives each its StreamSession, bounds and times out the connections that
// have not opened a stream (see Handshake), reaps the sessions that ended, answers
// daemon-wide stats, and on SIGTERM or SIGINT stops accepting, ends every session
// (reaping every worker), removes the socket and returns.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "daemon/admission.h"
#include "daemon/config.h"
#include "daemon/gateway_supervisor.h"
#include "daemon/listener.h"
#include "daemon/stream_session.h"
#include "forkfeed/client.h"

namespace forkfeed {

class Server {
 public:
  // Binds the socket. REQUIRES: SIGTERM and SIGINT are blocked in this thread (and so
  // in every thread it starts); the Server reads them from a signalfd.
  static Result<std::unique_ptr<Server>> start(DaemonConfig config);
  ~Server();

  // Serves until SIGTERM or SIGINT.
  Status run();
  const std::string& socket_path() const { return listener_.path(); }

 private:
  Server(DaemonConfig config, Listener listener, UniqueFd signals, UniqueFd stop,
         std::shared_ptr<WorkerPool> pool);
  // Accepts at most a bounded number of connections, so that expiring and reaping run
  // between rounds of a connect flood.
  void accept_some();
  // The most sessions held at once, ended-but-unreaped ones included.
  std::size_t max_sessions() const;
  // Keeps the connections without a stream under max_pending_connections for one more,
  // crowding out the oldest one silent long enough if need be. False: no room.
  // REQUIRES: mu_ held.
  bool make_room_for_handshake();
  // Connections without a stream, waiting for or answering a request. REQUIRES: mu_ held.
  std::size_t pending_connections() const;
  // Ends the handshakes of connections that opened no stream within handshake_timeout_ms
  // of accept, unless an open_stream is building its loader.
  void expire_handshakes();
  // Sessions waiting for a batch that a stuck worker holds see the daemon stopping (all,
  // when `stopping`) or their client gone.
  void wake_sessions(bool stopping);
  void reap(bool all);
  // Stops the gateway and the listener, tells every session to end, and joins them all
  // (their workers reaped). Again is harmless: run() stops so, and then the destructor.
  void stop_serving();
  nlohmann::json stats() const;

  DaemonConfig config_;
  // The decode workers of every stream; after the sessions go (declared before them).
  std::shared_ptr<WorkerPool> pool_;
  Admission admission_;
  Listener listener_;
  UniqueFd signals_;  // signalfd for SIGTERM, SIGINT
  UniqueFd stop_;     // eventfd, readable once stopping: every session polls it
  std::chrono::steady_clock::time_point started_;
  std::uint64_t next_id_ = 1;
  // The network process, with --listen (its streams are local ones of this daemon),
  // started again whenever it dies.
  std::unique_ptr<GatewaySupervisor> gateway_;
  mutable std::mutex mu_;  // sessions_: stats() runs on session threads
  std::list<std::unique_ptr<StreamSession>> sessions_;
};

}  // namespace forkfeed
