// StreamSession: one client connection, served by a thread of its own. It answers
// requests (open_stream, seek, stats, close) and, once a stream is open, runs its
// Loader — only this thread touches it — pushing what next() gives into the client's
// deliveries ring and releasing the batches the client returns. When the client goes
// (closed, crashed, killed) the loader is destroyed at once: its workers stopped and
// reaped, its arena unmapped.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "daemon/admission.h"
#include "daemon/config.h"
#include "daemon/handshake.h"
#include "daemon/lent_batches.h"
#include "daemon/listener.h"
#include "forkfeed/loader.h"
#include "protocol/consumer_channel.h"
#include "protocol/frame.h"

namespace forkfeed {

// What the server shares with every session. Outlives them.
struct SessionContext {
  const DaemonConfig* config;
  Admission* admission;
  int stop_fd;  // readable once the daemon is stopping
  std::function<nlohmann::json()> daemon_stats;
};

class StreamSession {
 public:
  // Starts the session's thread. When no thread can be started the connection is
  // refused with a notice and the session is finished() at once.
  StreamSession(std::uint64_t id, Listener::Peer peer, const SessionContext& context);
  // Joins the thread; it ends once the client is gone or the daemon stops.
  ~StreamSession();
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // The stream's stats, or null when no stream is open. Any thread.
  nlohmann::json stats() const;
  // The connection's phase before its stream; the server's to time out or crowd out.
  Handshake& handshake() { return handshake_; }

 private:
  void run();
  // Reads and answers one request; false: close the connection.
  bool handle_request();
  // Tells the client why the server ended its handshake; false: close the connection.
  bool refuse_ended_handshake();
  Status reply(const nlohmann::json& body, std::span<const int> fds = {});
  nlohmann::json open_stream(const nlohmann::json& body, std::vector<UniqueFd>& fds);
  nlohmann::json seek(const nlohmann::json& body);
  bool can_produce() const;
  void produce();
  void drain_returns();
  void publish_stats();
  void teardown();

  const std::uint64_t id_;
  Listener::Peer peer_;
  SessionContext context_;
  Handshake handshake_;  // after peer_: it uses the socket
  std::atomic<bool> finished_{false};
  std::uint32_t protocol_errors_ = 0;

  // The open stream; only the session thread touches these.
  Admission::Ticket ticket_;
  std::unique_ptr<Loader> loader_;
  std::optional<ConsumerChannel> channel_;
  Loader::SharedMemory memory_;
  std::optional<LentBatches> lent_;  // at the client or in its deliveries ring
  std::uint64_t pass_ = 1;
  bool fatal_sent_ = false;  // the loader's lasting error went out for this pass
  std::uint64_t bad_returns_ = 0;

  mutable std::mutex stats_mu_;
  nlohmann::json stats_;  // null until a stream is open
  std::chrono::steady_clock::time_point opened_;
  std::uint64_t delivered_batches_ = 0, delivered_samples_ = 0;

  std::thread thread_;  // started in the constructor's body, once everything above exists
};

}  // namespace forkfeed
