// StreamSession: one client connection, served by a thread of its own. It answers
// requests (hello, open_stream, seek, stats, close) and, once a stream is open, runs its
// ServedStream — only this thread touches it — producing deliveries while the client
// has room and releasing the batches it returns. When the client goes (closed, crashed,
// killed) the stream is destroyed at once: its workers stopped and reaped, its arena
// unmapped.
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
#include "daemon/listener.h"
#include "daemon/served_stream.h"
#include "forkfeed/loader.h"
#include "protocol/consumer_channel.h"
#include "protocol/frame.h"

namespace forkfeed {

// What the server shares with every session. Outlives them.
struct SessionContext {
  const DaemonConfig* config;
  Admission* admission;
  int stop_fd;                       // readable once the daemon is stopping
  std::shared_ptr<WorkerPool> pool;  // the decode workers every stream shares
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
  // Cuts short the stream's wait for its next batch (a worker stuck or stopped on a
  // sample, with no task_timeout), so that the session sees the daemon stopping, or
  // answers its client's request (close, say), or sees it gone: always when `stopping`,
  // else when the client's socket has something to read or hung up. Any thread.
  void wake(bool stopping);

 private:
  void run();
  // run()'s loop: requests, and the stream's deliveries.
  void serve();
  // Ends the stream, if one is open: its workers reaped, its memory and admission given back.
  void close_stream();
  // Reads and answers one request; false: close the connection.
  bool handle_request();
  // What a request calls for: a reply (with fds, for open_stream), none (a want), or the
  // end of the connection, asked for (close, replied to already), for a bad want (a
  // notice sent) or because the handshake ended.
  struct Answer {
    enum class Then { kReply, kNone, kClose, kHandshakeEnded };
    Then then = Then::kReply;
    nlohmann::json reply;
  };
  Answer answer_request(const Frame& frame, std::vector<UniqueFd>& fds);
  // Tells the client why the server ended its handshake; false: close the connection.
  bool refuse_ended_handshake();
  Status reply(const nlohmann::json& body, std::span<const int> fds = {});
  nlohmann::json open_stream(const nlohmann::json& body, std::vector<UniqueFd>& fds);
  nlohmann::json seek(const nlohmann::json& body);
  // The stream's stats, for stats(): after it opened, produced or was asked.
  void publish_stats();

  const std::uint64_t id_;
  Listener::Peer peer_;
  SessionContext context_;
  Handshake handshake_;  // after peer_: it uses the socket
  std::atomic<bool> finished_{false};
  std::uint32_t protocol_errors_ = 0;

  std::unique_ptr<ServedStream> stream_;  // once open_stream succeeded; only the session thread sets it
  // Guards stream_ (set, reset) against wake() from the server's thread.
  mutable std::mutex stream_mu_;
  mutable std::mutex stats_mu_;
  nlohmann::json stats_;  // null while no stream is open

  std::thread thread_;  // started in the constructor's body, once everything above exists
};

}  // namespace forkfeed
