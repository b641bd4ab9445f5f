// Gateway: forkfeed-gateway's loop. forkfeedd spawns it, before anything in forkfeedd
// could load UCX, when told to --listen; it is a local client of that forkfeedd and
// serves remote clients, one RemoteSession each: their control connections on its TCP
// listeners, their batches over UCX. UCX lives only here and in remote trainers: this
// process starts no child, ever (the fork rule: UCX marks what it registers
// MADV_DONTFORK and forbids a forked child to touch it).
//
// One thread, driven by events: progress the UCX workers (SendWorkers: one per tcp
// segment) until idle, arm, then poll their fds with the listeners and each session's
// control connection, daemon socket and deliveries.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "gateway/remote_session.h"
#include "gateway/send_workers.h"
#include "gateway/token_throttle.h"
#include "remote/ucx.h"

namespace forkfeed {

class Gateway {
 public:
  // Listens on each of `addresses` (HOST:PORT; port 0: any free one).
  static Result<std::unique_ptr<Gateway>> start(GatewaySettings settings,
                                                const std::vector<std::string>& addresses);
  ~Gateway();

  // "HOST:PORT" of each listener, the port resolved.
  const std::vector<std::string>& listening() const { return listening_; }
  // Serves until `stop_fd` is readable (or fails).
  Status run(int stop_fd);

 private:
  explicit Gateway(GatewaySettings settings) : settings_(std::move(settings)) {}
  void accept(int listener);
  // From inside the worker's progress: the session (if still there) only marks itself
  // finished; the loop ends it.
  static void on_endpoint_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  GatewaySettings settings_;
  std::optional<SendWorkers> workers_;
  std::vector<UniqueFd> listeners_;
  std::vector<std::string> listening_;
  // Ends `session`: its endpoint starts closing (watched in closing_), then it goes.
  std::list<std::unique_ptr<RemoteSession>>::iterator end_session(
      std::list<std::unique_ptr<RemoteSession>>::iterator it);
  // Watches the endpoint closes under way; frees those done, lets go of those overdue.
  void reap_closes(bool all);

  TokenThrottle throttle_;  // wrong tokens by address; before the sessions that use it
  std::list<std::unique_ptr<RemoteSession>> sessions_;  // destroyed before the worker
  struct Closing {
    ucs_status_ptr_t request;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Closing> closing_;
};

}  // namespace forkfeed
