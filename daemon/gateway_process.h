// GatewayProcess: forkfeedd's network process, forkfeed-gateway, as its child. forkfeedd
// spawns it (a fresh executable, never a fork) before anything loads UCX, and keeps UCX
// out of its own process: it starts workers for as long as it runs. The gateway dies
// with forkfeedd (its parent-death signal) and is reaped by this owner.
#pragma once

#include <string>
#include <vector>

#include "daemon/config.h"
#include "process/child_process.h"

namespace forkfeed {

class GatewayProcess {
 public:
  // Spawns forkfeed-gateway ($FORKFEED_GATEWAY, else next to this executable) for
  // `config`'s listen addresses, serving the daemon at `socket`, and waits until it
  // listens; an error carries the reason the gateway gave (a token file it cannot use, a
  // port taken). Must run on the main thread (the parent-death signal follows the spawner).
  static Result<GatewayProcess> start(const DaemonConfig& config, const std::string& socket);
  // What it listens on, each port resolved ("127.0.0.1:41233").
  const std::vector<std::string>& listening() const { return listening_; }
  int pidfd() const { return child_.pidfd(); }
  pid_t pid() const { return child_.pid(); }
  // Stops it (SIGTERM, then SIGKILL after 2 s) and reaps it.
  void stop();
  ChildProcess& child() { return child_; }

 private:
  GatewayProcess(ChildProcess child, std::vector<std::string> listening)
      : child_(std::move(child)), listening_(std::move(listening)) {}
  ChildProcess child_;
  std::vector<std::string> listening_;
};

}  // namespace forkfeed
