// GatewaySupervisor: keeps forkfeed-gateway serving for as long as forkfeedd runs. A
// gateway that dies is started again at the addresses it had (a port 0 resolved), and a
// start that fails — the token file empty or gone during a rotation, the port taken for a
// moment — is tried again after a back-off (0.5 s, doubling to 30 s), logged each time and
// shown in the daemon's stats, so that remote clients are served again within 30 s of the
// cause going away. Every start runs on forkfeedd's main thread, spawned, never forked,
// as the first one did: UCX never enters forkfeedd (the fork rule, ARCHITECTURE.md).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/backoff.h"
#include "daemon/config.h"
#include "daemon/gateway_process.h"

namespace forkfeed {

class GatewaySupervisor {
 public:
  using Clock = std::chrono::steady_clock;
  // The first try waits this long after a failure, each next one twice as long, at most
  // kMostWait; a gateway that served kSettled before it died is started again at once.
  static constexpr Clock::duration kFirstWait = std::chrono::milliseconds(500);
  static constexpr Clock::duration kMostWait = std::chrono::seconds(30);
  static constexpr Clock::duration kSettled = std::chrono::seconds(30);

  // Starts the first gateway for `config.listen`, serving the daemon at `socket`; its
  // failure is forkfeedd's (nothing to serve yet, and the operator is watching).
  // REQUIRES: the main thread, before anything could load UCX (GatewayProcess::start).
  static Result<std::unique_ptr<GatewaySupervisor>> start(const DaemonConfig& config,
                                                          const std::string& socket);
  ~GatewaySupervisor() { stop(); }
  GatewaySupervisor(const GatewaySupervisor&) = delete;
  GatewaySupervisor& operator=(const GatewaySupervisor&) = delete;

  // Notices a gateway that died, and starts one when a try is due. Cheap when there is
  // nothing to do; a start blocks until the gateway listens or fails (it says which at
  // once, or within GatewayProcess's 20 s). REQUIRES: the main thread.
  void tick(Clock::time_point now);
  // Stops the gateway (its remote streams close) and tries no more.
  void stop();

  // The addresses it serves now ("127.0.0.1:41233"); empty while no gateway runs.
  std::vector<std::string> listening() const;
  // The gateway's part of the daemon's stats (docs/daemon.md, forkfeed-ctl stats): "serving" or
  // "starting again", its pid, the restarts and failed starts so far, the failures in a
  // row, the last reason and when the next try comes. Any thread.
  nlohmann::json stats(Clock::time_point now) const;

 private:
  GatewaySupervisor(const DaemonConfig& config, std::string socket, GatewayProcess first);
  void noticed_death(Clock::time_point now);
  void try_start();

  DaemonConfig config_;  // listen: the first gateway's addresses, each port resolved
  const std::string socket_;
  std::optional<GatewayProcess> gateway_;  // main thread only
  Clock::time_point started_;              // of the running gateway
  Backoff backoff_{kFirstWait, kMostWait};

  // What stats() shows, written by the main thread.
  mutable std::mutex mu_;
  bool stopped_ = false;
  std::vector<std::string> listening_;
  pid_t pid_ = -1;
  Clock::time_point next_try_;  // while no gateway runs
  std::uint64_t restarts_ = 0;
  std::uint64_t failed_starts_ = 0;
  std::uint32_t failures_in_a_row_ = 0;
  std::string last_error_;
};

}  // namespace forkfeed
