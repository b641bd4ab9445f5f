// RemoteSession: one remote client of forkfeed-gateway, on its TCP control connection.
// It must greet first — {"token", "worker": its UCX worker address, "ucx_tcp_segment": the
// tcp segment its UCX receives in, if it says} — and then may open
// one stream of a named dataset, which the session opens on the local forkfeedd as any
// local client would (a DaemonConnection; the arena mapped read-only and registered with
// UCX once; the consumer channel). Requests — and the unanswered wants of a stream on
// demand — go on to the daemon and replies come back;
// each delivery goes out over UCX in order, a batch only for a credit, by rendezvous from
// its slot, and the slot goes back to the daemon once sent. The session ends when the
// client closes, breaks the protocol, or its connection or endpoint fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "client/client_stream.h"
#include "client/daemon_connection.h"
#include "gateway/send_workers.h"
#include "gateway/token_throttle.h"
#include "protocol/frame.h"
#include "remote/ucx.h"

namespace forkfeed {

struct GatewaySettings {
  std::string daemon_socket;
  std::string token;
  std::chrono::milliseconds greeting_timeout{5000};
  // Where endpoint failures go: UCX may report one after its session ended, so they go
  // to the gateway, which finds the session by endpoint (if it still has it).
  UcxEndpoint::ErrorCallback on_endpoint_error = nullptr;
  void* on_endpoint_error_arg = nullptr;
};

class RemoteSession {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes the accepted connection `control` from `peer` ("10.0.0.9:41822"), whose
  // TokenThrottle::address_of() is `address`; `throttle` (the gateway's) says when its
  // hello's token may be checked.
  RemoteSession(std::string peer, std::string address, UniqueFd control, SendWorkers& workers,
                const GatewaySettings& settings, TokenThrottle& throttle);
  // Closes the daemon's stream. REQUIRES: release_endpoint() was called, or the gateway
  // is going (then the endpoint closes here, waiting).
  ~RemoteSession();
  RemoteSession(const RemoteSession&) = delete;
  RemoteSession& operator=(const RemoteSession&) = delete;

  // The fds to poll (-1 while there is none): the control connection, the daemon's
  // socket, the channel's deliveries.
  int control_fd() const { return control_.get(); }
  int daemon_fd() const { return daemon_ ? daemon_->fd() : -1; }
  int delivered_fd() const { return stream_ ? stream_->client->channel().delivered_fd() : -1; }
  // Each when its fd is readable.
  void on_control();
  void on_daemon();
  void pump();  // sends what the daemon delivered, as credits allow
  // Beats, and ends a client that has not greeted in time.
  void tick(Clock::time_point now);
  bool finished() const { return finished_; }
  bool greeted() const { return phase_ != Phase::kGreeting; }
  // Ends a connection that has not greeted, to make room for a newer one.
  void crowd_out() {
    end(held_hello_
            ? "closed to make room: its hello was waiting for its turn after wrong tokens from its address"
            : "closed to make room: it sent no hello with the token in time");
  }
  // Its hello waits for its turn (TokenThrottle): the gateway polls more often meanwhile.
  bool waiting_turn() const { return held_hello_.has_value() && !finished_; }
  // Starts closing the endpoint to the client: flushed while the client is there, forced
  // once it failed. The request, for the gateway to see through without waiting on it.
  ucs_status_ptr_t release_endpoint() { return endpoint_.start_close(!endpoint_failed_); }
  ucp_ep_h endpoint() const { return endpoint_.get(); }
  // The endpoint to the client failed: it is gone or unreachable.
  void endpoint_failed(const std::string& why) {
    endpoint_failed_ = true;
    end("its UCX endpoint failed: " + why);
  }

 private:
  enum class Phase { kGreeting, kGreeted, kStreaming };
  void on_frame(const Frame& frame);
  void greet(const nlohmann::json& body);
  // Checks the token of a hello whose turn it is.
  void check_hello(const nlohmann::json& body);
  void reply(const nlohmann::json& body);
  void refuse(const Status& status);
  // Tells the client why the connection ends (a notice), then ends it.
  void end(const std::string& why);
  // Opens the client's stream on the daemon, with slots for the batches in transit unless
  // `plain` (the daemon refused them for its memory: then the stream as asked).
  Status open_stream(const nlohmann::json& body, bool plain = false);
  Status attach_stream(DaemonConnection::Reply& reply);
  void forward(MessageType type, const nlohmann::json& body);

  const std::string peer_;
  const std::string address_;  // the throttle's key
  UniqueFd control_;
  FrameReader reader_;
  SendWorkers& workers_;
  UcxWorker* worker_ = nullptr;  // the one of workers_ that sends to this client, from its hello
  const GatewaySettings& settings_;
  TokenThrottle& throttle_;
  // A hello that came while its address waits after a wrong token: checked in its turn.
  std::optional<nlohmann::json> held_hello_;
  const Clock::time_point accepted_;
  Clock::time_point last_beat_;
  Phase phase_ = Phase::kGreeting;
  bool finished_ = false;
  bool endpoint_failed_ = false;
  std::uint32_t bad_requests_ = 0;

  std::optional<DaemonConnection> daemon_;
  std::optional<MessageType> pending_;  // the request the daemon is answering
  // The client's own open_stream while the daemon answers one with transit slots added.
  std::optional<nlohmann::json> as_asked_;
  // A close the daemon answered: the reply waits until the endpoint to the client is
  // closed, so that the client (progressing while it waits for the reply) never tears
  // its worker down under the gateway's endpoint.
  struct Closing {
    nlohmann::json reply;
    ucs_status_ptr_t request;
    Clock::time_point deadline;
  };
  std::optional<Closing> closing_;
  // The daemon's stream as this session sees it: a ClientStream, as a Client's, and its
  // arena's registration with UCX. Shared with every batch send in flight, which reads
  // the arena until UCX calls it back (perhaps after this session ended) and then gives
  // the daemon its slot back through the channel.
  struct SharedStream {
    std::shared_ptr<ClientStream> client;
    UcxMemory registered;  // declared after `client`: deregistered before the arena goes
  };
  std::shared_ptr<const SharedStream> stream_;
  std::uint64_t sample_bytes_ = 0;
  std::uint32_t batch_size_ = 0;
  std::uint64_t generation_ = 0;       // deliveries of older ones are not sent
  std::deque<DeliveryRecord> queued_;  // taken from the ring, waiting for credits
  std::uint64_t credits_ = 0;
  std::uint64_t sequence_ = 0;
  UcxEndpoint endpoint_;  // to the client's worker, once greeted; last: closed first
};

}  // namespace forkfeed
