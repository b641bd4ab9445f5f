// Handshake: a connection's phase before it opens a stream, shared by its session thread
// and the server. Such connections cost a thread each and open no stream, so the server
// bounds them apart from max_streams and closes them when they stay silent: an idle
// socket can neither take a stream's place nor keep forkfeed-ctl out.
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
  Handshake(int socket, Clock::time_point accepted) : socket_(socket), since_(accepted) {}
  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  // The session thread. begin_request(): a complete request arrived; false if the
  // server ended the handshake first (then close with ended()'s reason).
  bool begin_request();
  // The request is answered; `streaming`: it opened a stream, the handshake is over.
  void end_request(bool streaming);
  // The connection is about to close: the server no longer touches its socket.
  void closing();
  End ended() const;

  // The server thread. Waiting for a request or answering one, without a stream:
  // counts against max_pending_connections.
  bool pending() const;
  // Ends the handshake if it has waited `limit` or longer for a request. True if it did.
  bool time_out(Clock::time_point now, Clock::duration limit);
  // Ends the handshake if it is waiting for a request. True if it did.
  bool crowd_out();

 private:
  // Records `why` and stops the socket's reading, which wakes the session thread from
  // its poll or from a half-read request. REQUIRES: mu_ held, phase_ is kWaiting.
  void end(End why);

  enum class Phase { kWaiting, kAnswering, kStreaming, kEnded, kClosing };
  mutable std::mutex mu_;
  int socket_;
  Phase phase_ = Phase::kWaiting;
  End end_ = End::kNone;
  Clock::time_point since_;
};

}  // namespace forkfeed
