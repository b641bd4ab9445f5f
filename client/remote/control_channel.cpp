// ControlChannel: the frames a remote client and its gateway exchange over TCP.
#include "client/remote/control_channel.h"

#include <poll.h>

#include <cstdlib>
#include <utility>

#include "protocol/stream_request.h"
#include "remote/token.h"

namespace forkfeed {

using json = nlohmann::json;

Result<std::string> ControlChannel::token(const RemoteDaemon& daemon) {
  std::string path = daemon.token_file;
  if (path.empty()) {
    const char* env = std::getenv("FORKFEED_TOKEN_FILE");
    if (env == nullptr || *env == '\0') {
      return Status::InvalidArgument(
          "a remote forkfeedd asks for its token: set token_file (or FORKFEED_TOKEN_FILE) to a copy of the "
          "file "
          "it was started with (--token-file)");
    }
    path = env;
  }
  return read_token_file(path, "the token file");
}

Status ControlChannel::hello(const std::string& token, const std::string& worker_address,
                             std::optional<std::uint64_t> tcp_segment) {
  json hello{{"protocol", kProtocolVersion}, {"token", token}, {"worker", bytes_to_json(worker_address)}};
  if (tcp_segment) hello["ucx_tcp_segment"] = *tcp_segment;
  return send_request(MessageType::kHello, hello);
}

Status ControlChannel::send_request(MessageType type, const json& body) {
  std::lock_guard lock(state_.mu);
  if (!state_.lost.ok()) return state_.lost;
  std::string payload;
  try {
    payload = body.dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("cannot write the request to forkfeedd: ") + e.what());
  }
  reply_.reset();
  if (Status s = send_frame(socket_.get(), type, payload); !s.ok()) {
    if (s.code() == Status::Code::kInvalidArgument) return s;  // too large: nothing was sent
    return state_.lose("cannot send it a request: " + s.message());
  }
  return Status::Ok();
}

std::optional<Result<json>> ControlChannel::take_reply() {
  std::lock_guard lock(state_.mu);
  if (!reply_) return std::nullopt;
  json reply = json::parse(*std::exchange(reply_, std::nullopt), nullptr, false);
  if (!reply.is_object()) return state_.lose("it sent a reply that is not a JSON object");
  try {
    if (Status s = reply_status(reply); !s.ok()) return s;
  } catch (const json::exception& e) {
    return state_.lose(std::string("it sent a malformed reply: ") + e.what());
  }
  return reply;
}

Status ControlChannel::want(std::uint64_t generation, std::span<const std::uint64_t> batches) {
  std::lock_guard lock(state_.mu);
  if (!state_.lost.ok()) return state_.lost;
  const json body{{"generation", generation}, {"batches", batches}};
  if (Status s = send_frame(socket_.get(), MessageType::kWant, body.dump()); !s.ok()) {
    return state_.lose("cannot send it the batches wanted: " + s.message());
  }
  return Status::Ok();
}

void ControlChannel::send_credits(std::uint32_t count) {
  if (count == 0) return;
  if (Status s = send_frame(socket_.get(), MessageType::kCredit, json{{"count", count}}.dump()); !s.ok()) {
    (void)state_.lose("cannot send it credits: " + s.message());
  }
}

void ControlChannel::read() {
  pollfd p{socket_.get(), POLLIN, 0};
  if (!state_.lost.ok() || ::poll(&p, 1, 0) != 1) return;
  // What came before the end is read first: a refusal's reply, the notice saying why.
  const Status filled = reader_.fill(socket_.get());
  while (state_.lost.ok()) {
    auto frame = reader_.next();
    if (!frame.ok()) {
      (void)state_.lose("it broke the protocol: " + frame.status().message());
      return;
    }
    if (!frame->has_value()) break;
    state_.heard += 1;
    const Frame& f = **frame;
    switch (static_cast<MessageType>(f.type)) {
      case MessageType::kHeartbeat: break;
      case MessageType::kReply: reply_ = f.payload; break;
      case MessageType::kNotice: {  // the gateway's own word on why: nothing to add to it
        const json body = json::parse(f.payload, nullptr, false);
        const std::string why = body.is_object() && body.contains("error") && body["error"].is_string()
                                    ? body["error"].get<std::string>()
                                    : std::string("no reason given");
        if (state_.lost.ok())
          state_.lost = Status::Unavailable("the remote forkfeedd at " + state_.address +
                                            " ended the connection: " + why);
        break;
      }
      default: (void)state_.lose("it sent a message of unknown type " + std::to_string(f.type));
    }
  }
  if (!filled.ok()) {
    (void)state_.lose(filled.message().starts_with("connection closed")
                          ? "it closed the connection (its forkfeedd or forkfeed-gateway stopped or crashed)"
                          : filled.message());
  }
}

}  // namespace forkfeed
