// Handshake: a connection's phase before it opens a stream, shared by its session thread
// and the server. Such connections cost a thread each and open no stream, so the server
// bounds them apart from max_streams and gives each a deadline from accept: neither an
// idle socket nor one that keeps asking and reading slowly can take a stream's place or
// keep forkfeed-ctl out.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace forkfeed {

class Handshake {
 public:
  using Clock = std::chrono::steady_clock;
  enum class End { kNone, kTimedOut, kCrowdedOut };

  // `socket` is the connection's; it must stay open until closing() returns.
  Handshake(int socket, Clock::time_point accepted)
      : socket_(socket), accepted_(accepted), quiet_since_(accepted) {}
  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  // The session thread. begin_request(): a complete request arrived; false if the
  // server ended the handshake first (then close with ended()'s reason).
  bool begin_request();
  // The request is an open_stream about to build its loader: from here until
  // end_request() the server leaves the connection alone. False if it was ended first.
  bool begin_opening();
  // The request is answered; `streaming`: it opened a stream, the handshake is over.
  // False if the server ended the handshake meanwhile: close the connection.
  bool end_request(bool streaming);
  // The connection is about to close: the server no longer touches its socket.
  void closing();
  End ended() const;

  // The server thread. Waiting for a request or answering one, without a stream:
  // counts against max_pending_connections.
  bool pending() const;
  // Ends the handshake if `limit` or more has passed since accept, replies or not,
  // unless an open_stream is building its loader. True if it did.
  bool time_out(Clock::time_point now, Clock::duration limit);
  // Ends the handshake if it is waiting for a request and has been silent (since accept
  // or its last reply) for `min_silence` or longer. True if it did.
  bool crowd_out(Clock::time_point now, Clock::duration min_silence);

 private:
  // Records `why` and shuts the socket down, which wakes the session thread from its
  // poll, a half-read request or a blocked reply. REQUIRES: mu_ held, phase_ is
  // kWaiting or kAnswering.
  void end(End why);

  // kAnswering: a request other than an open_stream, or one not yet known to be;
  // kOpening: an open_stream building its loader, never cut short.
  enum class Phase { kWaiting, kAnswering, kOpening, kStreaming, kEnded, kClosing };
  mutable std::mutex mu_;
  int socket_;
  Phase phase_ = Phase::kWaiting;
  End end_ = End::kNone;
  const Clock::time_point accepted_;  // the deadline counts from here, never reset
  Clock::time_point quiet_since_;     // accept or the last reply: for crowding out
};

}  // namespace forkfeed
