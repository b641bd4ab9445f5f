// ControlChannel: a RemoteLink's TCP connection to its gateway, as forkfeedd's frames.
// Out: the hello with the token, requests, credits and the batches wanted; in: replies,
// heartbeats and the gateway's notice of why it ended. Its writes and reads take turns
// with the link's thread, which sends credits too, under the link's mutex.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "base/unique_fd.h"
#include "client/remote/link_state.h"
#include "forkfeed/client.h"
#include "protocol/frame.h"

namespace forkfeed {

class ControlChannel {
 public:
  // `socket`: connected to the gateway. `state` outlives the channel.
  ControlChannel(LinkState& state, UniqueFd socket) : state_(state), socket_(std::move(socket)) {}

  // The token a hello presents: RemoteDaemon::token_file, else $FORKFEED_TOKEN_FILE.
  static Result<std::string> token(const RemoteDaemon& daemon);
  // Sends the hello: the token, where the gateway's UCX sends to (`worker_address`) and
  // the tcp segment that worker receives in, when its context knows it.
  Status hello(const std::string& token, const std::string& worker_address,
               std::optional<std::uint64_t> tcp_segment);
  // A request goes out; its reply, once read() has read it (nullopt until then). An
  // {"ok":false} reply becomes its Status; a malformed one loses the link.
  Status send_request(MessageType type, const nlohmann::json& body);
  std::optional<Result<nlohmann::json>> take_reply();
  // Asks the daemon's stream, opened on demand, for `batches` of the pass `generation`.
  Status want(std::uint64_t generation, std::span<const std::uint64_t> batches);

  // The calls below are made under the link's mutex (LinkState::mu).
  // Whether the reply to the request in flight came.
  bool has_reply() const { return reply_.has_value(); }
  // Reads what came, without waiting: replies, heartbeats, a notice (which ends the link).
  void read();
  // Gives the gateway `count` credits (none: nothing is sent).
  void send_credits(std::uint32_t count);

  // Readable when the gateway sent something.
  int fd() const { return socket_.get(); }
  // Ends the gateway's session, and with it its endpoint to this process's worker.
  void close() { socket_.reset(); }

 private:
  LinkState& state_;
  UniqueFd socket_;
  FrameReader reader_;
  std::optional<std::string> reply_;  // the reply to the request in flight, once it came
};

}  // namespace forkfeed
